package kvsim.alloc;

/**
 * The gauges every allocator model keeps, under the names of PyTorch's {@code
 * torch.cuda.memory_stats()} (reserved, allocated, requested; {@code liveAllocations} is its
 * current {@code allocation} count), plus the modelled time of the model's own operations. The
 * model owns the object and alone calls its mutators, as it serves and frees requests; the engine,
 * the metrics and the tests only read the gauges, through {@link Allocator#stats()}.
 *
 * <ul>
 *   <li>{@link #onAlloc} and {@link #onFree} move the allocated and requested bytes and the live
 *       count together, once per allocation served or freed. A refusal moves none of them.
 *   <li>{@link #reserve} and {@link #unreserve} move the reserved bytes: once at construction for
 *       the arena models, which hold their whole region; per segment obtained or returned (per page
 *       mapped or unmapped) for a caching model.
 *   <li>{@link #addModelledNanos} charges the cost of an operation (see {@link LatencyModel}).
 *   <li>Every getter is an O(1) field read. Each model's {@link Allocator#checkInvariants()}
 *       recomputes the gauges from its own structures and compares them with {@link #check}.
 * </ul>
 *
 * <p>Note [Gauge arithmetic]: requests go up to {@code Long.MAX_VALUE}, but a model refuses the
 * sizes it cannot represent and the gauges only count what was served, which lies in the model's
 * region: no byte gauge can leave the range of a long unless the model has a bug. The byte sums are
 * therefore {@link Math#addExact}, so that such a bug throws instead of wrapping into a plausible
 * number. Modelled time has no such bound (a calibration may charge anything per call), so it
 * saturates at {@code Long.MAX_VALUE} (292 years) and never runs backwards.
 */
public final class AllocatorStats {
  private long reservedBytes;
  private long allocatedBytes;
  private long requestedBytes;
  private long liveAllocations;
  private long modelledNanos;

  /** Creates gauges at zero: nothing reserved, nothing allocated, no time spent. */
  public AllocatorStats() {}

  /** Creates gauges for a model that holds {@code reservedBytes} from the start (an arena). */
  public static AllocatorStats reserving(long reservedBytes) {
    AllocatorStats stats = new AllocatorStats();
    stats.reserve(reservedBytes);
    return stats;
  }

  /** Returns the bytes held from the device (segments for a caching model, the region otherwise). */
  public long reservedBytes() {
    return reservedBytes;
  }

  /** Returns the bytes in allocated blocks, rounding and unsplit remainders included. */
  public long allocatedBytes() {
    return allocatedBytes;
  }

  /** Returns the bytes that callers asked for, summed over live allocations. */
  public long requestedBytes() {
    return requestedBytes;
  }

  /** Returns the number of live allocations. */
  public long liveAllocations() {
    return liveAllocations;
  }

  /** Returns the modelled time, in nanoseconds, spent in the model's own operations so far. */
  public long modelledNanos() {
    return modelledNanos;
  }

  /** Records an allocation served: {@code allocatedBytes} held for a request of {@code requestedBytes}. */
  public void onAlloc(long requestedBytes, long allocatedBytes) {
    this.allocatedBytes = Math.addExact(this.allocatedBytes, allocatedBytes);
    this.requestedBytes = Math.addExact(this.requestedBytes, requestedBytes);
    liveAllocations++;
  }

  /** Records the free of an allocation that held {@code allocatedBytes} for {@code requestedBytes}. */
  public void onFree(long requestedBytes, long allocatedBytes) {
    this.allocatedBytes -= allocatedBytes;
    this.requestedBytes -= requestedBytes;
    liveAllocations--;
  }

  /** Records {@code bytes} more held from the device. */
  public void reserve(long bytes) {
    reservedBytes = Math.addExact(reservedBytes, bytes);
  }

  /** Records {@code bytes} given back to the device. */
  public void unreserve(long bytes) {
    reservedBytes -= bytes;
  }

  /** Charges {@code nanos} (≥ 0) of modelled time, saturating at {@code Long.MAX_VALUE}. */
  public void addModelledNanos(long nanos) {
    long sum = modelledNanos + nanos;
    // Both are non-negative, so the sum overflowed exactly when it came out negative.
    modelledNanos = sum < 0 ? Long.MAX_VALUE : sum;
  }

  /**
   * Compares the gauges with the values a model recomputed from its own structures and throws
   * {@link InvariantViolation} naming {@code owner} and the first gauge that differs.
   */
  public void check(String owner, long reservedBytes, long allocatedBytes, long requestedBytes, long liveAllocations) {
    expect(owner, "reserved bytes", this.reservedBytes, reservedBytes);
    expect(owner, "allocated bytes", this.allocatedBytes, allocatedBytes);
    expect(owner, "requested bytes", this.requestedBytes, requestedBytes);
    expect(owner, "live allocations", this.liveAllocations, liveAllocations);
  }

  private static void expect(String owner, String gauge, long kept, long recomputed) {
    if (kept != recomputed) {
      throw new InvariantViolation(owner, gauge + ": the gauge reads " + kept + " but the model's structures add up to " + recomputed);
    }
  }

  @Override
  public String toString() {
    return "reserved " + reservedBytes + " B, allocated " + allocatedBytes + " B, requested " + requestedBytes + " B, "
        + liveAllocations + " live, " + modelledNanos + " ns";
  }
}
