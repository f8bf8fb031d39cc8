package kvsim.alloc.stitching;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The stitching model's rules written as plainly as possible, for differential testing: every
 * segment keeps a list of its blocks, every search scans all of them, the stitched pool is one list
 * in the order blocks were freed. It answers in chunk lists and virtual addresses, not in outcomes.
 */
final class NaiveStitching {
  static final long CHUNK = StitchingAllocator.CHUNK_BYTES;

  /** A block: chunks [start, start + length) of segment {@code segment}, owned by an allocation id or free (0). */
  static final class Block {
    int segment;
    int start;
    int length;
    long owner;

    Block(int segment, int start, int length, long owner) {
      this.segment = segment;
      this.start = start;
      this.length = length;
      this.owner = owner;
    }
  }

  static final class Segment {
    int slot;
    int[] chunks;
    List<Block> blocks = new ArrayList<>();
  }

  /** A stitched block: its slot and its ranges (segment, start, length). */
  static final class Stitched {
    int slot;
    int chunks;
    List<int[]> ranges = new ArrayList<>();
  }

  /** A live allocation: its chunks in order and its virtual address. */
  record Live(int[] chunks, long virtualAddress, Stitched stitched, Block block) {}

  final int chunkCount;
  final int maxStitched;
  final long virtualBase;
  final long poolBytes;
  final BitSet reserved = new BitSet();
  final BitSet slots = new BitSet();
  final List<Segment> segments = new ArrayList<>();
  final List<Stitched> pool = new ArrayList<>(); // least recently freed first
  final Map<Long, Live> live = new HashMap<>();
  long nextId = 1;
  long stitches;
  long reuses;
  long evicted;
  long calls;

  NaiveStitching(int chunkCount, int maxStitched, long virtualBase) {
    this.chunkCount = chunkCount;
    this.maxStitched = maxStitched;
    this.virtualBase = virtualBase;
    this.poolBytes = chunkCount * CHUNK;
  }

  int freeChunks() {
    int n = 0;
    for (Segment s : segments) {
      for (Block b : s.blocks) {
        n += b.owner == 0 ? b.length : 0;
      }
    }
    return n;
  }

  /** Serves a request; returns its id, or 0 when refused. */
  long allocate(long size) {
    if (size > poolBytes) {
      return 0;
    }
    int n = (int) ((size + CHUNK - 1) / CHUNK);
    if (n > freeChunks() + chunkCount - reserved.cardinality()) {
      return 0;
    }
    long id = nextId++;
    Block fit = bestFit(n);
    Stitched cached = null;
    for (Stitched s : pool) {
      if (cached == null && s.chunks == n && allFree(s)) {
        cached = s;
      }
    }
    if (fit != null && fit.length == n) {
      serve(id, fit, n);
    } else if (cached != null) {
      pool.remove(cached);
      for (int[] r : cached.ranges) {
        cut(segments.get(r[0]), r[1], r[2], id);
      }
      live.put(id, new Live(chunksOf(cached.ranges), address(cached.slot), cached, null));
      reuses++;
    } else if (fit != null) {
      serve(id, fit, n);
    } else if (freeChunks() == 0) {
      serve(id, newSegment(n), n);
    } else {
      if (freeChunks() < n) {
        newSegment(n - freeChunks());
      }
      Stitched s = new Stitched();
      s.chunks = n;
      int left = n;
      while (left > 0) {
        Block b = bestFit(left);
        if (b == null) {
          b = largest();
        }
        int k = Math.min(left, b.length);
        s.ranges.add(new int[] {b.segment, b.start, k});
        cut(segments.get(b.segment), b.start, k, id);
        left -= k;
      }
      s.slot = takeSlot();
      calls += 1 + n;
      stitches++;
      live.put(id, new Live(chunksOf(s.ranges), address(s.slot), s, null));
    }
    return id;
  }

  private void serve(long id, Block fit, int n) {
    Segment seg = segments.get(fit.segment);
    Block b = cut(seg, fit.start, n, id);
    live.put(id, new Live(chunksOf(List.of(new int[] {fit.segment, b.start, n})), address(seg.slot) + b.start * CHUNK, null, b));
  }

  long address(int slot) {
    return virtualBase + slot * poolBytes;
  }

  private int takeSlot() {
    int slot = slots.nextClearBit(0);
    slots.set(slot);
    return slot;
  }

  private Block newSegment(int k) {
    Segment s = new Segment();
    s.chunks = new int[k];
    for (int i = 0; i < k; i++) {
      int c = reserved.nextClearBit(0);
      reserved.set(c);
      s.chunks[i] = c;
    }
    s.slot = takeSlot();
    segments.add(s);
    Block b = new Block(segments.size() - 1, 0, k, 0);
    s.blocks.add(b);
    calls += 1 + 2L * k;
    return b;
  }

  /** Smallest free block of at least n chunks; ties to the oldest segment, then the lowest chunk. */
  private Block bestFit(int n) {
    Block best = null;
    for (Segment s : segments) {
      for (Block b : s.blocks) {
        if (b.owner == 0 && b.length >= n && (best == null || b.length < best.length)) {
          best = b;
        }
      }
    }
    return best;
  }

  private Block largest() {
    Block best = null;
    for (Segment s : segments) {
      for (Block b : s.blocks) {
        if (b.owner == 0 && (best == null || b.length > best.length)) {
          best = b;
        }
      }
    }
    return best;
  }

  private boolean allFree(Stitched s) {
    for (int[] r : s.ranges) {
      for (Block b : segments.get(r[0]).blocks) {
        if (b.owner != 0 && b.start < r[1] + r[2] && r[1] < b.start + b.length) {
          return false;
        }
      }
    }
    return true;
  }

  /** Cuts [start, start + length) out of the free block holding it, for {@code id}. */
  private Block cut(Segment seg, int start, int length, long id) {
    for (int i = 0; i < seg.blocks.size(); i++) {
      Block b = seg.blocks.get(i);
      if (b.start <= start && start < b.start + b.length) {
        if (b.owner != 0 || start + length > b.start + b.length) {
          throw new AssertionError("cut outside a free block");
        }
        List<Block> parts = new ArrayList<>();
        if (b.start < start) {
          parts.add(new Block(b.segment, b.start, start - b.start, 0));
        }
        Block mid = new Block(b.segment, start, length, id);
        parts.add(mid);
        if (start + length < b.start + b.length) {
          parts.add(new Block(b.segment, start + length, b.start + b.length - start - length, 0));
        }
        seg.blocks.remove(i);
        seg.blocks.addAll(i, parts);
        return mid;
      }
    }
    throw new AssertionError("no block holds chunk " + start);
  }

  private int[] chunksOf(List<int[]> ranges) {
    List<Integer> out = new ArrayList<>();
    for (int[] r : ranges) {
      for (int c = 0; c < r[2]; c++) {
        out.add(segments.get(r[0]).chunks[r[1] + c]);
      }
    }
    return out.stream().mapToInt(Integer::intValue).toArray();
  }

  void free(long id) {
    Live a = live.remove(id);
    for (Segment s : segments) {
      for (Block b : s.blocks) {
        if (b.owner == id) {
          b.owner = 0;
        }
      }
      // Merge adjacent free blocks.
      for (int i = 0; i + 1 < s.blocks.size(); ) {
        Block x = s.blocks.get(i);
        Block y = s.blocks.get(i + 1);
        if (x.owner == 0 && y.owner == 0) {
          x.length += y.length;
          s.blocks.remove(i + 1);
        } else {
          i++;
        }
      }
    }
    if (a.stitched() != null) {
      pool.add(a.stitched());
      if (pool.size() > maxStitched) {
        Stitched oldest = pool.remove(0);
        slots.clear(oldest.slot);
        evicted++;
        calls += oldest.chunks + 1L;
      }
    }
  }
}
