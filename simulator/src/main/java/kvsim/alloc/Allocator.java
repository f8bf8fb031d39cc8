package kvsim.alloc;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import kvsim.devicemodel.Region;

/**
 * An allocator model: it manages one {@link kvsim.devicemodel.Region} of the simulated device and answers
 * requests with extents inside it, or, for a {@link Capability#VIRTUAL} model, inside its {@link
 * #virtualSpace()} (Note [Virtual extents]). See {@code package-info.java} for the vocabulary.
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
 *   <li>The gauges are exact at every moment. Those of {@link #stats()} are field reads, O(1) for
 *       every model; {@link #freeBytes()} and {@link #largestFreeBytes()} cost what Note [Gauge
 *       cost] lists.
 *   <li>{@link #checkInvariants()} throws {@link InvariantViolation} if the model's state is
 *       inconsistent: overlapping extents, extents outside the region (the virtual space), bytes
 *       that do not balance, bad reference counts. Tests call it after every event.
 * </ul>
 *
 * <p>Note [Virtual extents]: a {@link Capability#VIRTUAL} model gives each allocation one range of
 * virtual addresses, the single extent its capability promises, backed by physical pages that need
 * not be adjacent. The pages lie in the region, and {@link #layout()} shows them; the virtual
 * ranges lie in {@link #virtualSpace()}, an address range apart from the region (as a GPU's virtual
 * addresses are apart from its physical memory), so that neither the engine nor a test mistakes a
 * virtual range for the physical memory it maps. What the contract says of extents holds there: no
 * two live ones overlap, and each lies inside the virtual space.
 *
 * <p>Note [Shared gauges]: what every model counts the same way (bytes reserved, allocated and
 * requested, live allocations, modelled time) lives in one {@link AllocatorStats} the model owns
 * and moves as it serves and frees; {@link #stats()} hands it out. {@link #freeBytes()} and {@link
 * #largestFreeBytes()} stay methods of the model, because what is free and which request would
 * still succeed are the model's policy (cached blocks and device headroom, whole pages, the largest
 * free extent rounded to the alignment, the prefix of request sizes that PyTorch's segment sizes
 * would serve): a counter cannot keep them without knowing that policy.
 *
 * <p>Note [Gauge cost]: the engine reads every gauge after every event, so each must be cheap. The
 * {@link #stats()} gauges are O(1) everywhere. {@link #freeBytes()} is O(1) in every model. {@link
 * #largestFreeBytes()} costs, per model:
 *
 * <ul>
 *   <li>{@code first-fit}: O(1), the largest extent kept at the root of the free-extent tree.
 *   <li>{@code slab}, {@code paged}: O(1), every free block or page (a splittable request can use
 *       them all); {@code vattention}: O(1), every free page (any request can use them all);
 *       {@code stitching}: O(1), every free or unreserved chunk (stitching can use them all).
 *   <li>{@code multi-slab}: O(number of size classes), a scan for the largest class with a free
 *       block (with {@code split=true}, for each class's free blocks up to the next class's block).
 *   <li>{@code pytorch-caching}: O(log n) in the free blocks and segments: a floor lookup in each
 *       pool's free-block tree, the driver's largest {@code cudaMalloc} from its releasable runs
 *       ({@code ReleasableRuns}, O(log n)), and binary searches over request sizes (some 60 steps
 *       of {@code round_size}, the segment-size one remembered across calls). With expandable
 *       segments it also visits every unmapped range of stream 0, O(number of unmapped ranges),
 *       when the device could still map a page or {@code max_split_size} is set.
 * </ul>
 *
 * <p>Measured with {@code GaugeBenchmark} (80 GiB device, 10,000 live allocations of 1-8 MiB after
 * 200,000 churn operations, shared 2-core machine): every {@link #stats()} gauge about 0.5-1 ns a
 * read; {@link #freeBytes()} as much, 1-3 ns for {@code pytorch-caching} (which asks its driver);
 * {@link #largestFreeBytes()} under 1 ns for {@code slab} and {@code paged}, 2-4 ns for {@code
 * first-fit} and {@code multi-slab} (four classes), about 20 ns for {@code pytorch-caching} and 23
 * ns with expandable segments.
 */
public interface Allocator {

  /** Returns the registry name of this model. */
  String name();

  /** Serves a request, or reports why it cannot. */
  AllocOutcome allocate(AllocRequest request);

  /** Returns the memory of a live allocation. */
  void free(long handle);

  /**
   * Returns the model's gauges (reserved, allocated and requested bytes, live count, modelled time):
   * one object for the model's whole life, which moves as the model works, so callers may keep it.
   */
  AllocatorStats stats();

  /** Returns the bytes that could still be handed out (cached free blocks plus unreserved memory). */
  long freeBytes();

  /**
   * Returns the largest request that would succeed now, as a splittable request where the model
   * splits; so {@code 1 − largestFreeBytes / freeBytes} is the share of free memory that no single
   * request can use (external fragmentation).
   */
  long largestFreeBytes();

  /** Returns the latency model in use. */
  LatencyModel latency();

  /** Checks the model's internal consistency; throws {@link InvariantViolation} when broken. */
  void checkInvariants();

  /** Returns the extents of a live allocation. */
  Extents extentsOf(long handle);

  /**
   * Returns the virtual address space that a {@link Capability#VIRTUAL} model's extents lie in,
   * apart from its region; empty for every other model, whose extents lie in its region (Note
   * [Virtual extents]).
   */
  default Optional<Region> virtualSpace() {
    return Optional.empty();
  }

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
