package kvsim.alloc.caching;

import static kvsim.alloc.caching.TorchCachingModel.MIN_BLOCK_BYTES;
import static kvsim.alloc.caching.TorchCachingModel.NAME;

import kvsim.alloc.InvariantViolation;

/**
 * The caching allocator's invariant checker: walks every segment of a {@link CachingAllocator} and
 * compares what the blocks add up to with the pools, the kept releasable-segment structures, {@code
 * torch.cuda.memory_stats()} ({@link TorchStats}), the SPI's gauges and the driver's books. The
 * rules are those {@code CUDACachingAllocator.cpp} @eb42ad6 keeps by construction (blocks tile a
 * segment, {@code free_block} leaves no two adjacent free blocks, {@code StatType} counters match
 * the blocks); PyTorch has no such checker.
 */
final class CachingInvariantChecker {
  private final CachingAllocator model;

  CachingInvariantChecker(CachingAllocator model) {
    this.model = model;
  }

  /** Throws {@link InvariantViolation} at the first rule the model breaks. */
  void check() {
    long[] allocatedBytes = new long[2];
    long[] allocations = new long[2];
    long[] requested = new long[2];
    long[] reserved = new long[2];
    long[] segmentCount = new long[2];
    long[] inactiveSplit = new long[2];
    long[] inactiveSplitBytes = new long[2];
    int[] freeMapped = new int[2];
    int[] unmapped = new int[2];
    long releasable = 0;
    int[] wholeSegments = new int[2];
    int[] unmappable = new int[2];
    for (Segment s : model.segments.values()) {
      int p = s.pool.small ? 0 : 1;
      if (!s.expandable) {
        segmentCount[p]++;
        reserved[p] += s.size;
      }
      if (s.head == null || s.head.prev != null || s.head.address != s.address) {
        fail("segment 0x" + Long.toHexString(s.address) + " has no proper first block");
      }
      long cursor = s.address;
      Block prev = null;
      for (Block b = s.head; b != null; b = b.next) {
        if (b.segment != s || b.prev != prev || b.address != cursor || b.size <= 0) {
          fail("blocks do not tile segment 0x" + Long.toHexString(s.address) + " at 0x" + Long.toHexString(cursor) + ": " + b);
        }
        if (b.size % MIN_BLOCK_BYTES != 0) {
          fail("block " + b + " is not a multiple of 512 B");
        }
        if (prev != null && !prev.allocated && !b.allocated && prev.mapped == b.mapped) {
          fail("two adjacent free blocks in segment 0x" + Long.toHexString(s.address) + ": " + prev + " and " + b);
        }
        if (!s.expandable && !b.mapped) {
          fail("unmapped block in classic segment: " + b);
        }
        if (b.allocated) {
          if (b.handle < 0 || b.handle >= model.handleHigh || model.byHandle[b.handle] != b) {
            fail("allocated block " + b + " has no handle");
          }
          allocations[p]++;
          allocatedBytes[p] += b.size;
          requested[p] += b.requestedSize;
        } else if (b.mapped) {
          freeMapped[p]++;
          if (!s.pool.blocks.contains(b)) {
            fail("free block " + b + " is not in its pool");
          }
          if (s.expandable && b.holdsWholePage()) {
            unmappable[p]++;
            if (!s.pool.unmappable.contains(b)) {
              fail("free block " + b + " holds a whole page but is not among its pool's unmappable blocks");
            }
          }
          if (!s.expandable && b.isSplit()) {
            inactiveSplit[p]++;
            inactiveSplitBytes[p] += b.size;
          }
        } else {
          unmapped[p]++;
          if (!s.pool.unmapped.contains(b)) {
            fail("unmapped block " + b + " is not in its pool's unmapped set");
          }
        }
        if (s.expandable && b.mapped) {
          reserved[p] += b.size;
        }
        cursor += b.size;
        prev = b;
      }
      if (cursor != s.end()) {
        fail("blocks cover " + (cursor - s.address) + " of segment 0x" + Long.toHexString(s.address) + " (" + s.size + " B)");
      }
      if (s.releasable != model.isReleasable(s)) {
        fail("segment 0x" + Long.toHexString(s.address) + " is marked " + (s.releasable ? "" : "not ") + "releasable");
      }
      if (s.pool.wholeSegments.contains(s) != (s.releasable && !s.expandable)) {
        fail("segment 0x" + Long.toHexString(s.address) + " is " + (s.releasable ? "missing from" : "wrongly in") + " its pool's whole segments");
      }
      releasable += s.releasable ? s.size : 0;
      wholeSegments[p] += s.releasable && !s.expandable ? 1 : 0;
    }
    expect("releasable segment bytes", model.releasableBytes, releasable);
    BlockPool[] pools = {model.smallPool, model.largePool};
    for (int p = 0; p < 2; p++) {
      if (pools[p].blocks.size() != freeMapped[p] || pools[p].unmapped.size() != unmapped[p]) {
        fail(pools[p].name() + " pool holds " + pools[p].blocks.size() + "/" + pools[p].unmapped.size()
            + " blocks but the segments have " + freeMapped[p] + " free and " + unmapped[p] + " unmapped");
      }
      if (pools[p].wholeSegments.size() != wholeSegments[p] || pools[p].unmappable.size() != unmappable[p]) {
        fail(pools[p].name() + " pool counts " + pools[p].wholeSegments.size() + " whole free segments and " + pools[p].unmappable.size()
            + " blocks with a whole page but has " + wholeSegments[p] + " and " + unmappable[p]);
      }
      boolean small = p == 0;
      expect("allocated_bytes", model.torchStats.currentPool(TorchStats.Kind.ALLOCATED_BYTES, small), allocatedBytes[p]);
      expect("allocation", model.torchStats.currentPool(TorchStats.Kind.ALLOCATION, small), allocations[p]);
      expect("active_bytes", model.torchStats.currentPool(TorchStats.Kind.ACTIVE_BYTES, small), allocatedBytes[p]);
      expect("active", model.torchStats.currentPool(TorchStats.Kind.ACTIVE, small), allocations[p]);
      expect("requested_bytes", model.torchStats.currentPool(TorchStats.Kind.REQUESTED_BYTES, small), requested[p]);
      expect("reserved_bytes", model.torchStats.currentPool(TorchStats.Kind.RESERVED_BYTES, small), reserved[p]);
      expect("segment", model.torchStats.currentPool(TorchStats.Kind.SEGMENT, small), segmentCount[p]);
      expect("inactive_split", model.torchStats.currentPool(TorchStats.Kind.INACTIVE_SPLIT, small), inactiveSplit[p]);
      expect("inactive_split_bytes", model.torchStats.currentPool(TorchStats.Kind.INACTIVE_SPLIT_BYTES, small), inactiveSplitBytes[p]);
    }
    expect("reserved_bytes.all (stat)", model.torchStats.currentAll(TorchStats.Kind.RESERVED_BYTES), reserved[0] + reserved[1]);
    expect("live handles", model.handleHigh - model.freeHandleCount, allocations[0] + allocations[1]);
    model.stats.check(
        NAME, reserved[0] + reserved[1], allocatedBytes[0] + allocatedBytes[1], requested[0] + requested[1],
        allocations[0] + allocations[1]);
    String negative = model.torchStats.firstNegative();
    if (negative != null) {
      fail("negative stat " + negative);
    }
    if (model.driver instanceof RegionDriver rd) {
      expect("driver bytes in use", rd.usedBytes(), model.totalAllocatedMemory());
      for (Segment s : model.segments.values()) {
        if (!s.expandable && (s.address < rd.baseBytes() || s.end() > rd.baseBytes() + rd.capacityBytes())) {
          fail("segment 0x" + Long.toHexString(s.address) + " lies outside the region");
        }
      }
      String ranges = rd.checkFreeRanges(NAME);
      if (ranges != null) {
        fail("driver: " + ranges);
      }
      String runs = rd.checkReleasable(model::releasableAt);
      if (runs != null) {
        fail("driver: " + runs);
      }
    }
    long largest = model.largestFreeBytes();
    long walked = model.largestFreeBytesByWalk();
    if (largest != walked) {
      fail("largest free request is " + largest + " B from the kept structures but " + walked + " B by walking the segments");
    }
    if (model.setFraction && model.totalAllocatedMemory() > model.allowedMemoryMaximum) {
      fail("reserved " + model.totalAllocatedMemory() + " B exceeds the memory fraction's " + model.allowedMemoryMaximum + " B");
    }
  }

  private void expect(String what, long actual, long recomputed) {
    if (actual != recomputed) {
      fail(what + " is " + actual + " but the blocks add up to " + recomputed);
    }
  }

  private void fail(String message) {
    throw new InvariantViolation(NAME, message);
  }}
