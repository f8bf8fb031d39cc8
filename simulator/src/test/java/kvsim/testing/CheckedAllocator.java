package kvsim.testing;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.devicemodel.Region;

/**
 * An allocator under test with every call checked: outcomes against an {@link ExtentLedger}, the
 * gauges against the relations the {@link Allocator} SPI promises for every model, and the model's
 * own {@link Allocator#checkInvariants()} after every event. Failures are {@link AssertionError}s
 * (or the model's {@code InvariantViolation}) naming the model and the event number.
 *
 * <p>The gauge relations: {@code 0 ≤ requested ≤ allocated ≤ reserved ≤ region}, {@code 0 ≤
 * largestFree ≤ free}, every refusal for lack of memory and every splittable request refused as
 * fragmentation above largestFree, {@code allocated + free ≤ region}, the allocated and requested bytes and the
 * live count equal to the ledger's sums, modelled time never decreasing, and {@link
 * Allocator#stats()} always the same object. Handles lie in [0, 2^56). Every check is written so
 * that it cannot overflow itself, since requests may be as large as {@code Long.MAX_VALUE}: a
 * wrapped sum would let a wrong allocation pass.
 *
 * <p>The ledger holds extents of the region, or of the model's virtual space where it has one
 * ({@link Allocator#virtualSpace()}, Note [Virtual extents]), which must not overlap the region.
 */
public final class CheckedAllocator {
  private final Allocator allocator;
  private final AllocatorStats stats;
  private final Region region;
  private final ExtentLedger ledger;
  private final List<Long> live = new ArrayList<>();
  private long events;
  private long lastModelledNanos;
  private int allocations;
  private int refusals;

  /** Wraps {@code allocator}, which manages {@code region}, and checks its fresh state. */
  public CheckedAllocator(Allocator allocator, Region region) {
    this.allocator = allocator;
    this.stats = allocator.stats();
    this.region = region;
    Region space = allocator.virtualSpace().orElse(region);
    if (space != region && space.baseBytes() < region.endBytes() && region.baseBytes() < space.endBytes()) {
      throw new AssertionError(allocator.name() + ": virtual space " + space + " overlaps the region " + region);
    }
    this.ledger = new ExtentLedger(space);
    afterEvent("construction");
  }

  /** Returns the wrapped model. */
  public Allocator allocator() {
    return allocator;
  }

  /** Returns the handles of the live allocations, oldest first. */
  public List<Long> liveHandles() {
    return live;
  }

  /** Returns how many requests succeeded so far. */
  public int allocations() {
    return allocations;
  }

  /** Returns how many requests were refused so far. */
  public int refusals() {
    return refusals;
  }

  /** Makes a request and checks its outcome. */
  public AllocOutcome allocate(AllocRequest request) {
    long allocatedBefore = stats.allocatedBytes();
    long requestedBefore = stats.requestedBytes();
    long liveBefore = stats.liveAllocations();
    AllocOutcome outcome = allocator.allocate(request);
    String what = "request of " + request.sizeBytes() + " B";
    if (outcome instanceof AllocOutcome.Allocated a) {
      allocations++;
      Extents extents = a.extents();
      require(a.handle() >= 0 && a.handle() < 1L << 56, what + ": handle " + a.handle() + " is outside [0, 2^56)");
      long total = extents.totalBytes(); // exact: throws rather than wraps
      require(a.allocatedBytes() >= request.sizeBytes(), what + ": allocated " + a.allocatedBytes() + " B");
      require(
          total >= request.sizeBytes() && total <= a.allocatedBytes(),
          what + ": extents hold " + total + " B, allocated " + a.allocatedBytes() + " B");
      ledger.add(a.handle(), extents, request.sizeBytes(), a.allocatedBytes());
      require(allocator.extentsOf(a.handle()).equals(extents), what + ": extentsOf differs from the outcome");
      live.add(a.handle());
    } else {
      refusals++;
      AllocOutcome.OutOfMemory oom = (AllocOutcome.OutOfMemory) outcome;
      require(oom.requestedBytes() == request.sizeBytes(), what + ": refusal reports " + oom.requestedBytes() + " B");
      require(oom.freeBytes() == allocator.freeBytes(), what + ": refusal reports free " + oom.freeBytes()
          + " B, the model " + allocator.freeBytes() + " B");
      if (oom.reason() == OomReason.FRAGMENTATION) {
        require(oom.freeBytes() >= oom.requestedBytes(), what + ": fragmentation with only " + oom.freeBytes() + " B free");
      }
      // The largest free request is the largest splittable one that would succeed (the SPI's
      // definition), so a splittable refusal lies above it, as does a refusal for lack of memory. An
      // unsplittable request may be refused below it as fragmentation where the model would serve a
      // splittable one of its size with blocks it cannot use as one (multi-slab with split=true).
      if (oom.reason() == OomReason.NO_MEMORY || (oom.reason() == OomReason.FRAGMENTATION && request.splittable())) {
        require(
            oom.largestFreeBytes() < oom.requestedBytes(),
            what + ": refused although the largest request that would succeed is " + oom.largestFreeBytes() + " B");
      }
      require(
          stats.allocatedBytes() == allocatedBefore
              && stats.requestedBytes() == requestedBefore
              && stats.liveAllocations() == liveBefore,
          what + ": a refusal changed the allocated or requested bytes or the live count");
    }
    afterEvent(what);
    return outcome;
  }

  /** Frees a live allocation, checking that it gives back exactly the extents it was given. */
  public void free(long handle) {
    Extents reported = allocator.extentsOf(handle);
    allocator.free(handle);
    ledger.release(handle, reported);
    live.remove(Long.valueOf(handle));
    afterEvent("free of " + handle);
  }

  /** Frees the live allocation at position {@code index} of {@link #liveHandles()}. */
  public void freeAt(int index) {
    free(live.get(index));
  }

  /** Frees every live allocation, newest first. */
  public void freeAll() {
    while (!live.isEmpty()) {
      free(live.get(live.size() - 1));
    }
  }

  private void afterEvent(String what) {
    events++;
    allocator.checkInvariants();
    require(allocator.stats() == stats, what + ": stats() returned another object than at construction");
    long reserved = stats.reservedBytes();
    long allocated = stats.allocatedBytes();
    long requested = stats.requestedBytes();
    long free = allocator.freeBytes();
    long largest = allocator.largestFreeBytes();
    String gauges =
        what + ": reserved " + reserved + ", allocated " + allocated + ", requested " + requested + ", free "
            + free + ", largest free " + largest + ", region " + region.sizeBytes();
    require(0 <= requested && requested <= allocated, gauges);
    require(allocated <= reserved && reserved <= region.sizeBytes(), gauges);
    require(0 <= largest && largest <= free, gauges);
    require(free <= region.sizeBytes() - allocated, gauges); // allocated + free ≤ region, without the sum
    require(stats.liveAllocations() == ledger.liveCount(), what + ": live count " + stats.liveAllocations()
        + ", ledger " + ledger.liveCount());
    require(requested == ledger.requestedBytes(), what + ": requested " + requested + ", ledger " + ledger.requestedBytes());
    require(allocated == ledger.allocatedBytes(), what + ": allocated " + allocated + ", outcomes sum to "
        + ledger.allocatedBytes());
    long nanos = stats.modelledNanos();
    require(nanos >= lastModelledNanos, what + ": modelled time went back from " + lastModelledNanos + " to " + nanos);
    lastModelledNanos = nanos;
  }

  private void require(boolean condition, String message) {
    if (!condition) {
      throw new AssertionError(allocator.name() + ", event " + events + ": " + message);
    }
  }
}
