package kvsim.alloc;

/** An allocator model found its own state inconsistent. Always a bug in the model. */
public final class InvariantViolation extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public InvariantViolation(String allocator, String message) {
    super(allocator + ": invariant broken: " + message);
  }
}
