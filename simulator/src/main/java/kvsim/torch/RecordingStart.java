package kvsim.torch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.core.InputException;

/**
 * The allocator state at the start of a recording, rebuilt from a snapshot's final segments and
 * its trace walked backwards.
 *
 * <ul>
 *   <li>Start from the final segments and their live blocks. Walking the trace backwards, an {@code
 *       alloc} means its block did not exist before, a {@code free_completed} means it did (with
 *       only its requested size known), a {@code segment_alloc} means the segment did not exist, a
 *       {@code segment_free} means it did.
 *   <li>A block that was live at the start and freed during the recording gets the rounded size of
 *       its request ({@link #inferred()}); the gap after it, if too small to have been split off
 *       (PyTorch's {@code should_split}: up to 1 MiB in the large pool, under 512 B in the small
 *       pool), is given to it.
 *   <li>Every other gap between live blocks is one free block.
 * </ul>
 *
 * <p>Expandable segments can be rebuilt only when none was mapped at the start (a recording from
 * process start, or a kvsim export): a reservation's base and size are not in the file.
 *
 * <p>Note [Unknowable remainders]: {@code free_*} entries carry the requested size, not the block
 * size. For a block allocated before recording began and freed during it, an unsplit remainder of
 * up to 1 MiB (large pool) that the real block held may instead sit in a free neighbour of the
 * rebuilt block, if that neighbour is free at the start. While such a block is live, a best-fit
 * search can then see a free block up to 1 MiB larger than the real one. A recording made from
 * process start has no such blocks.
 */
final class RecordingStart {
  /** A block live at the start whose size had to be inferred from its request. */
  record Inferred(long address, long requestedBytes, long sizeBytes, long absorbedBytes, int freedAtEvent, long segmentAddress) {}

  private final List<SegmentLayout> segments;
  private final Map<Long, Inferred> inferred;

  private RecordingStart(List<SegmentLayout> segments, Map<Long, Inferred> inferred) {
    this.segments = segments;
    this.inferred = inferred;
  }

  /** Returns the classic segments at the start, with their blocks. */
  List<SegmentLayout> segments() {
    return segments;
  }

  /** Returns the blocks whose size was inferred, by address. */
  Map<Long, Inferred> inferred() {
    return inferred;
  }

  private record Seg(long size, long stream, boolean small) {}

  private static final class Live {
    final long address;
    final long requested;
    final long stream;
    long size; // -1 when unknown
    final int freedAt;

    Live(long address, long size, long requested, long stream, int freedAt) {
      this.address = address;
      this.size = size;
      this.requested = requested;
      this.stream = stream;
      this.freedAt = freedAt;
    }
  }

  /** Rebuilds the start state of one device; {@code model} supplies rounding and the split rule. */
  static RecordingStart rebuild(
      String source, List<TorchSnapshot.Segment> finalSegments, List<TorchSnapshot.Entry> trace, TorchCachingModel model) {
    TreeMap<Long, Seg> segs = new TreeMap<>();
    TreeMap<Long, Live> live = new TreeMap<>();
    long mappedBytes = 0;
    for (TorchSnapshot.Segment s : finalSegments) {
      if (s.expandable()) {
        mappedBytes += s.totalSize();
      } else {
        segs.put(s.address(), new Seg(s.totalSize(), s.stream(), s.small()));
      }
      for (TorchSnapshot.Block b : s.blocks()) {
        if (b.live()) {
          live.put(b.address(), new Live(b.address(), b.size(), b.requestedSize(), s.stream(), -1));
        }
      }
    }
    for (int i = trace.size() - 1; i >= 0; i--) {
      TorchSnapshot.Entry e = trace.get(i);
      switch (e.action()) {
        case "alloc" -> {
          if (live.remove(e.addr()) == null) {
            throw inconsistent(source, i, e, "no live block at that address follows it");
          }
        }
        case "free_completed" -> {
          if (live.containsKey(e.addr())) {
            throw inconsistent(source, i, e, "the block at that address is already live after it");
          }
          live.put(e.addr(), new Live(e.addr(), -1, e.size(), e.stream(), i));
        }
        case "segment_alloc" -> {
          if (segs.remove(e.addr()) == null) {
            throw inconsistent(source, i, e, "no segment at that address follows it");
          }
        }
        case "segment_free" -> {
          if (segs.put(e.addr(), new Seg(e.size(), e.stream(), e.size() == TorchCachingModel.SMALL_BUFFER_BYTES)) != null) {
            throw inconsistent(source, i, e, "a segment at that address already exists after it");
          }
        }
        case "segment_map" -> mappedBytes -= e.size();
        case "segment_unmap" -> mappedBytes += e.size();
        default -> {}
      }
    }
    if (mappedBytes != 0) {
      throw new InputException(
          source + ": expandable segments were mapped before the recording began (" + mappedBytes
              + " B); their reservations are not in the file, so the start state cannot be rebuilt");
    }
    TorchAllocConf conf = model.conf();
    List<SegmentLayout> out = new ArrayList<>();
    Map<Long, Inferred> inferred = new HashMap<>();
    for (Map.Entry<Long, Seg> se : segs.entrySet()) {
      long segAddr = se.getKey();
      Seg seg = se.getValue();
      long end = segAddr + seg.size;
      List<SegmentLayout.Block> blocks = new ArrayList<>();
      long cursor = segAddr;
      Live prev = null;
      for (Live b : live.subMap(segAddr, true, end, false).values()) {
        if (b.size < 0) {
          // PyTorch serves no request of 1 EiB or more, and round_size could not represent some.
          if (b.requested >= TorchCachingModel.MAX_REQUEST_BYTES) {
            throw new InputException(source + ": event " + b.freedAt + ": a block of " + b.requested + " B is beyond the 1 EiB PyTorch serves");
          }
          b.size = model.roundSize(b.requested);
          if ((b.size <= TorchCachingModel.SMALL_SIZE_BYTES) != seg.small) {
            throw new InputException(source + ": event " + b.freedAt + ": a block of " + b.requested + " B cannot live in the " + (seg.small ? "small" : "large") + " segment at 0x" + Long.toHexString(segAddr));
          }
        }
        if (b.address < cursor) {
          throw new InputException(source + ": live blocks overlap at 0x" + Long.toHexString(b.address) + " in the state rebuilt at the start of the recording");
        }
        cursor = gap(blocks, prev, cursor, b.address, seg, conf, inferred, segAddr);
        blocks.add(new SegmentLayout.Block(b.address, b.size, b.requested, SegmentLayout.State.ACTIVE_ALLOCATED));
        if (b.freedAt >= 0) {
          inferred.put(b.address, new Inferred(b.address, b.requested, b.size, 0, b.freedAt, segAddr));
        }
        cursor = b.address + b.size;
        prev = b;
      }
      if (cursor > end) {
        throw new InputException(source + ": a live block runs past the end of segment 0x" + Long.toHexString(segAddr));
      }
      gap(blocks, prev, cursor, end, seg, conf, inferred, segAddr);
      out.add(new SegmentLayout(segAddr, seg.size, seg.small ? "small" : "large", seg.stream, false, blocks));
    }
    for (Live b : live.values()) {
      Map.Entry<Long, Seg> s = segs.floorEntry(b.address);
      if (s == null || b.address >= s.getKey() + s.getValue().size) {
        throw new InputException(source + ": the block at 0x" + Long.toHexString(b.address) + " lies in no segment of the rebuilt start state");
      }
    }
    return new RecordingStart(out, inferred);
  }

  /** Fills [from, to) after {@code prev}: given to an inferred block if too small to split, else one free block. */
  private static long gap(
      List<SegmentLayout.Block> blocks, Live prev, long from, long to, Seg seg, TorchAllocConf conf, Map<Long, Inferred> inferred, long segAddr) {
    long gap = to - from;
    if (gap <= 0) {
      return from;
    }
    if (prev != null && prev.freedAt >= 0 && !wouldSplit(seg.small, prev.size, gap, conf)) {
      SegmentLayout.Block last = blocks.remove(blocks.size() - 1);
      blocks.add(new SegmentLayout.Block(last.addressBytes(), last.sizeBytes() + gap, last.requestedBytes(), last.state()));
      prev.size += gap;
      inferred.put(prev.address, new Inferred(prev.address, prev.requested, prev.size, gap, prev.freedAt, segAddr));
      return to;
    }
    blocks.add(new SegmentLayout.Block(from, gap, 0, SegmentLayout.State.INACTIVE));
    return to;
  }

  /** PyTorch's should_split for a block of size + remaining serving size. */
  private static boolean wouldSplit(boolean small, long size, long remaining, TorchAllocConf conf) {
    if (small || conf.expandableSegments()) {
      return remaining >= TorchCachingModel.MIN_BLOCK_BYTES;
    }
    return size < conf.maxSplitSizeBytes() && remaining > TorchCachingModel.SMALL_SIZE_BYTES;
  }

  private static InputException inconsistent(String source, int index, TorchSnapshot.Entry e, String problem) {
    return new InputException(
        source + ": event " + index + " (" + e.action() + " at 0x" + Long.toHexString(e.addr()) + "): the trace does not match the final segments: " + problem);
  }
}
