package kvsim.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.core.Tag;
import kvsim.metrics.MemoryMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** The memory map's decimation (Note [Memory map decimation]) against a brute-force replay of the same calls. */
class MemoryMapRecorderTest {

  /** A random stream of allocations (1 to 3 extents), frees and refusals, applied to a recorder and kept for checking. */
  private static final class Stream {
    final List<long[]> extents = new ArrayList<>(); // per extent: address, size, start event, end event (events + 1 if live)
    long events;
    long ooms;
  }

  private static Stream drive(MemoryMapRecorder r, long seed, int steps) {
    SplittableRandom rnd = new SplittableRandom(seed);
    Stream s = new Stream();
    Map<Long, List<Integer>> live = new HashMap<>();
    long next = 0;
    for (int i = 0; i < steps; i++) {
      r.time(i);
      s.events++;
      int op = rnd.nextInt(10);
      if (op < 5 || live.isEmpty()) {
        int n = 1 + rnd.nextInt(3);
        Extents.Builder b = new Extents.Builder(n);
        List<Integer> mine = new ArrayList<>();
        for (int k = 0; k < n; k++) {
          long addr = rnd.nextLong(1L << 30) * 512;
          long size = (1 + rnd.nextLong(1 << 20)) * 512;
          b.add(addr, size);
          mine.add(s.extents.size());
          s.extents.add(new long[] {addr, size, s.events, -1});
        }
        Extents x = b.build();
        if (x.count() != n) { // adjacent extents merged: record what the recorder sees
          for (int k = 0; k < n; k++) {
            s.extents.remove(s.extents.size() - 1);
          }
          mine.clear();
          for (int k = 0; k < x.count(); k++) {
            mine.add(s.extents.size());
            s.extents.add(new long[] {x.offsetBytes(k), x.sizeBytes(k), s.events, -1});
          }
        }
        live.put(next, mine);
        r.allocated(next++, new AllocRequest(x.totalBytes(), Tag.of(rnd.nextBoolean() ? "kv" : "temp"), true, 0), x, x.totalBytes());
      } else if (op < 9) {
        long id = live.keySet().stream().sorted().skip(rnd.nextInt(live.size())).findFirst().orElseThrow();
        for (int e : live.remove(id)) {
          s.extents.get(e)[3] = s.events;
        }
        r.freed(id, 1, 0, null);
      } else {
        r.refused(next++, new AllocRequest(512, Tag.KV, true, 0), new AllocOutcome.OutOfMemory(OomReason.FRAGMENTATION, 512, 0, 0));
        s.ooms++;
      }
    }
    for (long[] e : s.extents) {
      if (e[3] < 0) {
        e[3] = s.events + 1;
      }
    }
    return s;
  }

  @Property(tries = 40)
  void keepsAtMostTheBoundAndAccountsForEveryByte(
      @ForAll long seed, @ForAll @IntRange(min = 1, max = 60) int maxRectangles, @ForAll @IntRange(min = 1, max = 3000) int steps) {
    MemoryMapRecorder r = new MemoryMapRecorder("test", maxRectangles);
    Stream s = drive(r, seed, steps);
    MemoryMap m = r.memoryMap();
    assertEquals(s.events, m.events());
    assertEquals(s.ooms, m.oomTotal());
    assertEquals(s.extents.size(), m.rectanglesSeen());
    assertTrue(m.rectangles().size() <= maxRectangles, m.rectangles().size() + " rectangles kept, more than " + maxRectangles);
    assertTrue(m.oomCounts().length <= MemoryMap.MAX_BINS && m.elidedMeanBytes().length == m.oomCounts().length);
    assertEquals((s.events + m.binEvents() - 1) / m.binEvents(), m.oomCounts().length, "the bins cover every event");
    // Every kept rectangle is one of the stream's extents, and is larger than the threshold.
    for (MemoryMap.Rectangle k : m.rectangles()) {
      assertTrue(s.extents.stream().anyMatch(e -> e[0] == k.addressBytes() && e[1] == k.sizeBytes() && e[2] == k.startEvent() && e[3] == k.endEvent()));
      assertTrue((double) k.sizeBytes() * (k.endEvent() - k.startEvent()) > m.minAreaByteEvents());
    }
    // The band is the exact mean of the bytes live but not drawn, bin by bin.
    double[] live = new double[(int) s.events];
    for (long[] e : s.extents) {
      for (long ev = e[2]; ev < Math.min(e[3], s.events + 1); ev++) {
        live[(int) ev - 1] += e[1];
      }
    }
    for (MemoryMap.Rectangle k : m.rectangles()) {
      for (long ev = k.startEvent(); ev < Math.min(k.endEvent(), s.events + 1); ev++) {
        live[(int) ev - 1] -= k.sizeBytes();
      }
    }
    for (int b = 0; b < m.elidedMeanBytes().length; b++) {
      double sum = 0;
      int n = 0;
      for (long ev = b * m.binEvents(); ev < Math.min((b + 1) * m.binEvents(), s.events); ev++) {
        sum += live[(int) ev];
        n++;
      }
      assertEquals(Math.round(sum / n), m.elidedMeanBytes()[b], 1.0, "bin " + b);
    }
  }

  @Test
  void keepsTheLargestRectangles() {
    MemoryMapRecorder r = new MemoryMapRecorder("test", 2);
    long[] sizes = {1 << 20, 64L << 20, 2 << 20, 128L << 20, 4 << 20};
    for (int i = 0; i < sizes.length; i++) {
      r.time(i);
      r.allocated(i, new AllocRequest(sizes[i], Tag.KV, true, 0), Extents.single(i * (256L << 20), sizes[i]), sizes[i]);
    }
    for (int i = 0; i < sizes.length; i++) {
      r.time(sizes.length + i);
      r.freed(i, sizes[i], 0, null);
    }
    MemoryMap m = r.memoryMap();
    assertEquals(List.of(64L << 20, 128L << 20), m.rectangles().stream().map(MemoryMap.Rectangle::sizeBytes).sorted().toList());
    assertEquals(5, m.rectanglesSeen());
  }

  /**
   * Note [Open slots sorted as numbers]: the allocations live at the end are closed (and so kept)
   * by start event, then id, whatever slots they sit in; two that start at one event take the
   * comparator's path.
   */
  @Test
  void allocationsLiveAtTheEndCloseByStartEventThenId() {
    MemoryMapRecorder r = new MemoryMapRecorder("test", 100);
    r.time(0);
    r.allocated(10, new AllocRequest(512, Tag.KV, true, 0), Extents.single(0, 512), 512); // slot 0, event 1
    r.time(1);
    r.allocated(11, new AllocRequest(512, Tag.KV, true, 0), Extents.single(512, 512), 512); // slot 1, event 2
    r.time(2);
    r.freed(10, 512, 0, null); // slot 0 free again
    r.time(3);
    r.allocated(12, new AllocRequest(512, Tag.KV, true, 0), Extents.single(1024, 512), 512); // slot 0, event 4
    assertEquals(List.of(0L, 512L, 1024L), r.memoryMap().rectangles().stream().map(MemoryMap.Rectangle::addressBytes).toList(),
        "by start event: the freed one, then 11 (slot 1), then 12 (slot 0)");

    MemoryMapRecorder same = new MemoryMapRecorder("test", 100);
    same.time(0);
    same.allocated(7, new AllocRequest(512, Tag.KV, true, 0), Extents.single(4096, 512), 512); // slot 0
    same.allocated(3, new AllocRequest(512, Tag.KV, true, 0), Extents.single(8192, 512), 512); // slot 1, the same event
    assertEquals(List.of(8192L, 4096L), same.memoryMap().rectangles().stream().map(MemoryMap.Rectangle::addressBytes).toList(),
        "one start event: by id, 3 before 7");
  }

  @Test
  void refusesAnIdThatIsAlreadyLive() {
    MemoryMapRecorder r = new MemoryMapRecorder("test", 2);
    r.time(0);
    r.allocated(1, new AllocRequest(512, Tag.KV, true, 0), Extents.single(0, 512), 512);
    assertThrows(IllegalArgumentException.class, () -> r.allocated(1, new AllocRequest(512, Tag.KV, true, 0), Extents.single(512, 512), 512));
    r.freed(1, 512, 0, null);
    r.allocated(1, new AllocRequest(512, Tag.KV, true, 0), Extents.single(512, 512), 512); // free again after the free
    assertEquals(2, r.memoryMap().rectanglesSeen());
  }
}
