package kvsim.alloc;

import java.util.List;
import java.util.Map;

/**
 * An allocator model: it manages one {@link kvsim.devicemodel.Region} of the simulated device and answers
 * requests with extents inside it. See {@code package-info.java} for the vocabulary.
 *
 * <p>Contract, checked for every registered model by {@code AllocatorContractTest}:
 *
 * <ul>
 *   <li>{@link #allocate} never throws for lack of memory; it returns {@link AllocOutcome.OutOfMemory}
 *       and leaves the model's state as it was, apart from cache releases the modelled system
 *       itself performs before giving up (PyTorch's retry ladder).
 *   <li>Every positive size up to {@code Long.MAX_VALUE} is a valid request: a size whose rounding,
 *       page or block count the model cannot represent is refused, never served wrongly and never
 *       met with an exception. Size arithmetic is overflow-checked ({@code Math.addExact}, or a bound
 *       tested before the arithmetic).
 *   <li>Handles are in [0, 2^56): the replay engine keeps the region of a memory plan in the bits
 *       above (Note [Handle encoding] in {@code kvsim.engine.RegionRouter}).
 *   <li>{@link #free} of a handle that is not live (never returned, or already freed) throws {@link
 *       AllocatorMisuseException}.
 *   <li>The byte gauges are exact at every moment and cost O(1) (or O(number of size classes)).
 *   <li>{@link #checkInvariants()} throws {@link InvariantViolation} if the model's state is
 *       inconsistent: overlapping extents, extents outside the region, bytes that do not balance,
 *       bad reference counts. Tests call it after every event.
 * </ul>
 */
public interface Allocator {

  /** Returns the registry name of this model. */
  String name();

  /** Serves a request, or reports why it cannot. */
  AllocOutcome allocate(AllocRequest request);

  /** Returns the memory of a live allocation. */
  void free(long handle);

  /** Returns the bytes held from the device (segments for a caching model, the region otherwise). */
  long reservedBytes();

  /** Returns the bytes in allocated blocks, rounding and unsplit remainders included. */
  long allocatedBytes();

  /** Returns the bytes that callers asked for, summed over live allocations. */
  long requestedBytes();

  /** Returns the bytes that could still be handed out (cached free blocks plus unreserved memory). */
  long freeBytes();

  /**
   * Returns the largest request that would succeed now, as a splittable request where the model
   * splits; so {@code 1 − largestFreeBytes / freeBytes} is the share of free memory that no single
   * request can use (external fragmentation).
   */
  long largestFreeBytes();

  /** Returns the number of live allocations. */
  long liveAllocations();

  /** Returns the modelled time, in nanoseconds, spent in this model's own operations so far. */
  long modelledNanos();

  /** Returns the latency model in use. */
  LatencyModel latency();

  /** Checks the model's internal consistency; throws {@link InvariantViolation} when broken. */
  void checkInvariants();

  /** Returns the extents of a live allocation. */
  Extents extentsOf(long handle);

  /**
   * Returns the segments the model holds and the blocks that tile them, in address order, for
   * snapshot export and inspection.
   */
  List<SegmentLayout> layout();

  /** Returns model-specific counters and gauges by result-file name (empty by default). */
  default Map<String, Long> extraMetrics() {
    return Map.of();
  }

  /** Registers a listener for device-level events (segment alloc/free, map/unmap). */
  default void setListener(AllocatorListener listener) {}
}
