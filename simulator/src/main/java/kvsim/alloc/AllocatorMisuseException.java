package kvsim.alloc;

/** A caller broke the contract: freed a handle that is not live (double free, unknown handle). */
public final class AllocatorMisuseException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public AllocatorMisuseException(String message) {
    super(message);
  }
}
