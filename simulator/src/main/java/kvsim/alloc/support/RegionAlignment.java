package kvsim.alloc.support;

import kvsim.alloc.AllocatorContext;
import kvsim.alloc.InvariantViolation;
import kvsim.core.Bytes;
import kvsim.devicemodel.Region;

/**
 * The alignment rule of the extent allocators (first-fit, best-fit): every request is rounded up
 * to a multiple of the alignment and every allocation starts at a multiple of it from the region's
 * base. Pure arithmetic, no policy.
 */
public final class RegionAlignment {
  private final Region region;
  private final long alignmentBytes;

  /**
   * An alignment of {@code alignmentBytes} over {@code region}; throws IllegalArgumentException
   * when it is not positive or when rounding a size up to the region's could leave a long.
   */
  public RegionAlignment(Region region, long alignmentBytes) {
    if (alignmentBytes <= 0) {
      throw new IllegalArgumentException("alignment must be positive, got " + alignmentBytes);
    }
    // The models refuse sizes above the region before rounding; this bound makes the rounding of
    // every size up to the region (and the mask's size + alignment - 1) fit in a long.
    if (Bytes.ceilDiv(region.sizeBytes(), alignmentBytes) > Long.MAX_VALUE / alignmentBytes) {
      throw new IllegalArgumentException(
          "a region of " + region.sizeBytes() + " B cannot be rounded to an alignment of " + alignmentBytes + " B");
    }
    this.region = region;
    this.alignmentBytes = alignmentBytes;
  }

  /**
   * Returns why {@code alignmentBytes} cannot be a model's {@code alignment} option, or null.
   *
   * <p>Note [Power-of-two alignments]: the arithmetic here rounds to any positive alignment, but the
   * allocators the models stand for align to powers of two only (CUDA's 256 B, PyTorch's 512 B, 2 MiB
   * large pages), so an option of 3 B or 1000 B describes no real allocator and is refused rather
   * than run; the constructors still take any positive alignment for tests of the arithmetic.
   */
  public static String optionProblem(long alignmentBytes) {
    return alignmentBytes > 0 && Long.bitCount(alignmentBytes) == 1 ? null : "must be a power of two";
  }

  /**
   * Reads a model's option {@code alignment} (default {@code defaultBytes}), refusing one that is not
   * a power of two (Note [Power-of-two alignments]) with the value as the user wrote it.
   */
  public static long option(AllocatorContext context, long defaultBytes) {
    String given = context.optional("alignment");
    long alignmentBytes = context.bytes("alignment", defaultBytes);
    String problem = optionProblem(alignmentBytes);
    if (problem != null) {
      throw context.bad("alignment", given, problem);
    }
    return alignmentBytes;
  }

  /** Returns the alignment. */
  public long bytes() {
    return alignmentBytes;
  }

  /** Rounds a size no larger than the region up to the alignment; a mask for a power of two, which spares the hot path a division. */
  public long roundUp(long sizeBytes) {
    return (alignmentBytes & (alignmentBytes - 1)) == 0
        ? (sizeBytes + alignmentBytes - 1) & -alignmentBytes
        : Bytes.roundUp(sizeBytes, alignmentBytes);
  }

  /**
   * Returns the largest aligned size within {@code bytes}; a mask for a power of two and a size not
   * below zero, which spares the gauge read after every replayed event a division.
   */
  public long roundDown(long bytes) {
    return (alignmentBytes & (alignmentBytes - 1)) == 0 && bytes >= 0 ? bytes & -alignmentBytes : bytes - bytes % alignmentBytes;
  }

  /**
   * Checks one live allocation of {@code owner}: it holds its request rounded up, and starts at an
   * aligned offset; throws {@link InvariantViolation} otherwise.
   */
  public void checkAllocation(String owner, long offsetBytes, long allocatedBytes, long requestedBytes) {
    if (allocatedBytes != Bytes.roundUp(requestedBytes, alignmentBytes) || requestedBytes <= 0) {
      throw new InvariantViolation(owner, "allocation at " + offsetBytes + " holds " + allocatedBytes + " B for " + requestedBytes + " B");
    }
    if ((offsetBytes - region.baseBytes()) % alignmentBytes != 0) {
      throw new InvariantViolation(owner, "allocation at " + offsetBytes + " is not aligned");
    }
  }
}
