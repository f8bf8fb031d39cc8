package kvsim.alloc.paged;

/**
 * An operation the block manager refuses because its caller broke the rules (an unknown or finished
 * request, a lookup of a running request, zero new tokens): never a lack of memory, which is an
 * outcome. {@link #field()} names the argument at fault, in the script's field names.
 */
public final class BlockOpException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String field;

  public BlockOpException(String field, String message) {
    super(message);
    this.field = field;
  }

  /** Returns the argument at fault ({@code req}, {@code num_new_tokens}, …). */
  public String field() {
    return field;
  }
}
