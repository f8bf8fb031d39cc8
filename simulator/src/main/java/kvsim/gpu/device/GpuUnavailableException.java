package kvsim.gpu.device;

/**
 * No GPU can be used here: the driver library is missing, no device is present, or the bindings'
 * native library cannot load. Its message is one line saying what is missing; the GPU commands
 * print it and exit with status 3.
 */
public final class GpuUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A one-line reason. */
  public GpuUnavailableException(String message) {
    super(message);
  }

  /** A one-line reason, with the error that showed it. */
  public GpuUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
