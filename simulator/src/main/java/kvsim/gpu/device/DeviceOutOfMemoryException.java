package kvsim.gpu.device;

/** The device could not satisfy an allocation ({@code CUDA_ERROR_OUT_OF_MEMORY}): a result of a replay, not a failure of kvsim. */
public final class DeviceOutOfMemoryException extends Exception {
  private static final long serialVersionUID = 1L;

  /** An allocation of {@code sizeBytes} failed. */
  public DeviceOutOfMemoryException(long sizeBytes) {
    super("the device could not allocate " + sizeBytes + " bytes");
  }
}
