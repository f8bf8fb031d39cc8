package kvsim.alloc.caching;

import static kvsim.alloc.caching.TorchCachingModel.SMALL_BUFFER_BYTES;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.alloc.SegmentLayout;

/**
 * The caching allocator's side of PyTorch memory snapshots ({@code torch.cuda.memory._snapshot()},
 * whose segments and blocks {@code CUDACachingAllocator.cpp} @eb42ad6 fills in {@code snapshot()}):
 * restoring segments and blocks that existed before a recording started, the lookups a replay uses to
 * match recorded events with the model's blocks, and the layout written back in the same terms.
 * PyTorch itself never restores a state; restored blocks enter {@link CachingAllocator}'s pools,
 * segment map, handles and statistics as if its own {@code malloc} had made them.
 */
final class SnapshotRestore {
  private final CachingAllocator model;

  SnapshotRestore(CachingAllocator model) {
    this.model = model;
  }

  /**
   * Installs a classic segment that existed before the model started, with its blocks (which must
   * tile it, no two adjacent free); returns the handles of its blocks in order, -1 for free ones.
   * Used to rebuild the state at the start of a recording ({@code kvsim.torch.RecordingStart}).
   */
  long[] restoreSegment(SegmentLayout layout) {
    boolean small = layout.pool().equals("small");
    BlockPool pool = small ? model.smallPool : model.largePool;
    if (model.segments.containsKey(layout.addressBytes())) {
      throw new IllegalArgumentException("two segments at 0x" + Long.toHexString(layout.addressBytes()));
    }
    checkTiling(layout.addressBytes(), layout.sizeBytes(), layout.blocks(), false);
    model.noteStream(layout.stream());
    model.driver.adopt(layout.addressBytes(), layout.sizeBytes());
    Segment seg = new Segment(layout.addressBytes(), layout.sizeBytes(), layout.stream(), pool, false, 0, model.nextSerial++);
    model.putSegment(seg);
    model.stats.reserve(seg.size);
    model.torchStats.increase(TorchStats.Kind.SEGMENT, small, 1);
    model.torchStats.increase(TorchStats.Kind.RESERVED_BYTES, small, seg.size);
    if (seg.size >= model.maxSplitSize) {
      model.torchStats.oversizeSegment(true);
    }
    List<SegmentLayout.Block> in = layout.blocks();
    Block[] made = new Block[in.size()];
    Block prev = null;
    for (int i = 0; i < made.length; i++) {
      SegmentLayout.Block sb = in.get(i);
      Block b = new Block(seg, sb.addressBytes(), sb.sizeBytes());
      b.splice(prev, null);
      prev = b;
      made[i] = b;
    }
    long[] handles = adoptBlocks(made, in, small);
    model.segmentChanged(seg);
    return handles;
  }

  /**
   * Installs an expandable segment that existed before the model started: a reservation of {@code
   * sizeBytes} at {@code addressBytes} whose mapped runs (snapshot "segments" with {@code
   * is_expandable}) are given; everything else is unmapped. Returns the handles as {@link
   * #restoreSegment} does, over the runs' blocks in order.
   */
  long[] restoreExpandableSegment(long addressBytes, long sizeBytes, long stream, boolean small, List<SegmentLayout> runs) {
    BlockPool pool = small ? model.smallPool : model.largePool;
    long page = small ? SMALL_BUFFER_BYTES : model.conf.largeSegmentSizeBytes();
    model.noteStream(stream);
    Segment seg = new Segment(addressBytes, sizeBytes, stream, pool, true, page, model.nextSerial++);
    model.putSegment(seg);
    List<Block> made = new ArrayList<>();
    List<SegmentLayout.Block> in = new ArrayList<>();
    Block prev = null;
    long cursor = addressBytes;
    for (SegmentLayout run : runs) {
      checkTiling(run.addressBytes(), run.sizeBytes(), run.blocks(), true);
      if (run.addressBytes() < cursor || (run.addressBytes() - addressBytes) % page != 0 || run.sizeBytes() % page != 0) {
        throw new IllegalArgumentException("expandable run at 0x" + Long.toHexString(run.addressBytes()) + " overlaps or is not page aligned");
      }
      if (run.addressBytes() > cursor) {
        Block u = new Block(seg, cursor, run.addressBytes() - cursor);
        u.mapped = false;
        u.splice(prev, null);
        prev = u;
        pool.unmapped.add(u);
      }
      model.driver.adopt(run.addressBytes(), run.sizeBytes());
      for (SegmentLayout.Block sb : run.blocks()) {
        Block b = new Block(seg, sb.addressBytes(), sb.sizeBytes());
        b.splice(prev, null);
        prev = b;
        made.add(b);
        in.add(sb);
      }
      model.stats.reserve(run.sizeBytes());
      model.torchStats.increase(TorchStats.Kind.RESERVED_BYTES, small, run.sizeBytes());
      cursor = run.addressBytes() + run.sizeBytes();
    }
    if (cursor > addressBytes + sizeBytes) {
      throw new IllegalArgumentException("expandable runs end past their reservation");
    }
    if (cursor < addressBytes + sizeBytes) {
      Block u = new Block(seg, cursor, addressBytes + sizeBytes - cursor);
      u.mapped = false;
      u.splice(prev, null);
      pool.unmapped.add(u);
    }
    long[] handles = adoptBlocks(made.toArray(new Block[0]), in, small);
    model.segmentChanged(seg);
    return handles;
  }

  private long[] adoptBlocks(Block[] made, List<SegmentLayout.Block> in, boolean small) {
    long[] handles = new long[made.length];
    for (int i = 0; i < made.length; i++) {
      Block b = made[i];
      SegmentLayout.Block sb = in.get(i);
      if (sb.state() == SegmentLayout.State.ACTIVE_ALLOCATED) {
        b.allocated = true;
        b.requestedSize = sb.requestedBytes();
        b.handle = model.newHandle(b);
        handles[i] = b.handle;
        model.torchStats.increase(TorchStats.Kind.ALLOCATION, small, 1);
        model.torchStats.increase(TorchStats.Kind.ALLOCATED_BYTES, small, b.size);
        model.torchStats.increase(TorchStats.Kind.ACTIVE, small, 1);
        model.torchStats.increase(TorchStats.Kind.ACTIVE_BYTES, small, b.size);
        model.torchStats.increase(TorchStats.Kind.REQUESTED_BYTES, small, b.requestedSize);
        model.stats.onAlloc(b.requestedSize, b.size);
        if (b.size >= model.maxSplitSize) {
          model.torchStats.oversizeAllocation(true);
        }
      } else {
        handles[i] = -1;
        b.segment.pool.insert(b);
        if (b.isSplit() && !b.expandable()) {
          model.torchStats.increase(TorchStats.Kind.INACTIVE_SPLIT, small, 1);
          model.torchStats.increase(TorchStats.Kind.INACTIVE_SPLIT_BYTES, small, b.size);
        }
      }
    }
    return handles;
  }

  private static void checkTiling(long address, long size, List<SegmentLayout.Block> blocks, boolean expandable) {
    long cursor = address;
    boolean prevFree = false;
    for (SegmentLayout.Block b : blocks) {
      if (b.addressBytes() != cursor || b.sizeBytes() <= 0) {
        throw new IllegalArgumentException("blocks of segment 0x" + Long.toHexString(address) + " do not tile it at 0x" + Long.toHexString(cursor));
      }
      boolean free = b.state() != SegmentLayout.State.ACTIVE_ALLOCATED;
      if (free && prevFree) {
        throw new IllegalArgumentException("two adjacent free blocks in segment 0x" + Long.toHexString(address) + " at 0x" + Long.toHexString(cursor));
      }
      prevFree = free;
      cursor += b.sizeBytes();
    }
    if (cursor != address + size) {
      throw new IllegalArgumentException("blocks of segment 0x" + Long.toHexString(address) + " cover " + (cursor - address) + " of " + size + " bytes");
    }
  }

  /**
   * Returns the block starting at {@code addressBytes} as {address, size, allocated (1/0), start of
   * the next block, its size, whether it is free (1/0)}, the last three -1 when there is no next
   * block; null when no block starts there.
   */
  long[] blockAt(long addressBytes) {
    Map.Entry<Long, Segment> e = model.segments.floorEntry(addressBytes);
    if (e == null || addressBytes >= e.getValue().end()) {
      return null;
    }
    for (Block b = e.getValue().head; b != null; b = b.next) {
      if (b.address == addressBytes) {
        Block n = b.next;
        return new long[] {
          b.address, b.size, b.allocated ? 1 : 0, n == null ? -1 : n.address, n == null ? -1 : n.size, n == null ? -1 : (n.allocated || !n.mapped ? 0 : 1)
        };
      }
    }
    return null;
  }

  /** Returns the start address of the segment holding {@code addressBytes}, or -1. */

  long segmentAddressOf(long addressBytes) {
    Map.Entry<Long, Segment> e = model.segments.floorEntry(addressBytes);
    return e == null || addressBytes >= e.getValue().end() ? -1 : e.getKey();
  }

  /** Describes the segment holding {@code addressBytes} and its blocks in plain words, or null. */

  String describeSegmentAt(long addressBytes) {
    Map.Entry<Long, Segment> e = model.segments.floorEntry(addressBytes);
    if (e == null || addressBytes >= e.getValue().end()) {
      return null;
    }
    Segment s = e.getValue();
    StringBuilder sb = new StringBuilder();
    sb.append(s.expandable ? "expandable segment" : "segment").append(" 0x").append(Long.toHexString(s.address))
        .append(" (").append(s.pool.name()).append(" pool, stream ").append(s.stream).append(", ")
        .append(s.size).append(" B):");
    int n = 0;
    for (Block b = s.head; b != null; b = b.next) {
      if (n++ == 40) {
        sb.append(" …");
        break;
      }
      sb.append(' ').append(b.allocated ? "allocated" : b.mapped ? "free" : "unmapped")
          .append(" +").append(b.address - s.address).append(" ").append(b.size).append(" B");
      if (b.allocated) {
        sb.append(" (requested ").append(b.requestedSize).append(")");
      }
      sb.append(';');
    }
    sb.setLength(sb.length() - 1);
    return sb.append('.').toString();
  }

  List<SegmentLayout> layout() {
    List<SegmentLayout> out = new ArrayList<>();
    for (Segment s : model.segments.values()) {
      if (!s.expandable) {
        List<SegmentLayout.Block> blocks = new ArrayList<>();
        for (Block b = s.head; b != null; b = b.next) {
          blocks.add(layoutBlock(b));
        }
        out.add(new SegmentLayout(s.address, s.size, s.pool.name(), s.stream, false, blocks));
        continue;
      }
      List<SegmentLayout.Block> run = null;
      long runStart = 0;
      long runSize = 0;
      for (Block b = s.head; b != null; b = b.next) {
        if (b.mapped) {
          if (run == null) {
            run = new ArrayList<>();
            runStart = b.address;
            runSize = 0;
          }
          run.add(layoutBlock(b));
          runSize += b.size;
        } else if (run != null) {
          out.add(new SegmentLayout(runStart, runSize, s.pool.name(), s.stream, true, run));
          run = null;
        }
      }
      if (run != null) {
        out.add(new SegmentLayout(runStart, runSize, s.pool.name(), s.stream, true, run));
      }
    }
    return out;
  }

  private static SegmentLayout.Block layoutBlock(Block b) {
    return new SegmentLayout.Block(
        b.address,
        b.size,
        b.allocated ? b.requestedSize : 0,
        b.allocated ? SegmentLayout.State.ACTIVE_ALLOCATED : SegmentLayout.State.INACTIVE);
  }}
