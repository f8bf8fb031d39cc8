package kvsim.alloc.caching;

import static kvsim.alloc.caching.Harness.MiB;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The largest free request kept as segments change (Note [Releasable segments]) equals the walk over
 * every segment ({@code largestFreeBytesByWalk}) after every operation, on devices small enough to
 * stay full, under each family of options; the driver's releasable runs equal a walk after every
 * driver call; and the retry ladder's {@code release_cached_blocks} still releases whole segments
 * in pool order (Note [Releasing whole segments]).
 */
class LargestFreeProperties {
  /** An operation that calls {@code empty_cache}. */
  private static final long EMPTY_CACHE = Long.MIN_VALUE;

  private static final String[] CONFS = {
    "",
    "max_split_size_mb:40",
    "max_split_size_mb:20,max_non_split_rounding_mb:30",
    "roundup_power2_divisions:[1:4,8:2,>:8]",
    "large_segment_size_mb:4",
    "expandable_segments:True",
    "expandable_segments:True,max_split_size_mb:40",
    "expandable_segments:True,large_segment_size_mb:6",
    "per_process_memory_fraction:0.7",
    "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6",
    "per_process_memory_fraction:0.6,garbage_collection_threshold:0.3,max_split_size_mb:30"
  };

  @Provide
  Arbitrary<String> confs() {
    return Arbitraries.of(CONFS);
  }

  @Provide
  Arbitrary<List<Long>> ops() {
    // Positive: allocate that many bytes; negative or zero: free live allocation number |op|.
    Arbitrary<Long> sizes =
        Arbitraries.frequencyOf(
            Tuple.of(4, Arbitraries.longs().between(1, MiB)),
            Tuple.of(4, Arbitraries.longs().between(MiB, 12 * MiB)),
            Tuple.of(3, Arbitraries.longs().between(12 * MiB, 96 * MiB)));
    Arbitrary<Long> frees = Arbitraries.longs().between(-1000, 0);
    return Arbitraries.frequencyOf(Tuple.of(6, sizes), Tuple.of(4, frees), Tuple.of(1, Arbitraries.just(EMPTY_CACHE)))
        .list()
        .ofMinSize(1)
        .ofMaxSize(400);
  }

  @Property(tries = 300)
  void theKeptLargestFreeRequestEqualsTheWalkAfterEveryStep(
      @ForAll("confs") String conf,
      @ForAll("ops") List<Long> ops,
      @ForAll boolean segmentAge,
      @ForAll boolean twoStreams,
      @ForAll boolean unalignedRegion) {
    // An unaligned region starts and ends off the 2 MiB grid, so the driver rounds it inwards.
    Region region = unalignedRegion ? new Region("kv", 3 * MiB + 4096, 301 * MiB) : new Region("all", 0, 300 * MiB);
    CachingAllocator m = new CachingAllocator(TorchAllocConf.parse(conf), segmentAge ? TieBreak.SEGMENT_AGE : TieBreak.ADDRESS, region);
    List<Long> live = new ArrayList<>();
    int step = 0;
    for (long op : ops) {
      step++;
      if (op == EMPTY_CACHE) {
        m.emptyCache();
      } else if (op > 0) {
        long stream = twoStreams && step % 3 == 0 ? 7 : 0;
        AllocOutcome o = m.allocate(new AllocRequest(op, Tag.TEMP, false, stream));
        if (o instanceof AllocOutcome.Allocated a) {
          live.add(a.handle());
        } else {
          assertEquals(m.largestFreeBytesByWalk(), ((AllocOutcome.OutOfMemory) o).largestFreeBytes(), "the refusal's own gauge");
        }
      } else if (!live.isEmpty()) {
        m.free(live.remove((int) (-op % live.size())));
      }
      int at = step;
      assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes(), () -> "step " + at + " (" + op + ") under '" + conf + "'");
      m.checkInvariants();
    }
    for (long h : live) {
      m.free(h);
      assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes());
    }
    m.emptyCache();
    m.checkInvariants();
    assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes());
  }

  /** Long seeded churn whose live set overfills the device, as a replay of a churn trace does. */
  @ParameterizedTest(name = "''{0}''")
  @ValueSource(
      strings = {
        "",
        "max_split_size_mb:40",
        "expandable_segments:True",
        "expandable_segments:True,max_split_size_mb:40",
        "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6",
        "per_process_memory_fraction:0.8,max_split_size_mb:24"
      })
  void aLongChurnOnAFullDeviceAgreesWithTheWalkAtEveryEvent(String conf) {
    CachingAllocator m = new CachingAllocator(TorchAllocConf.parse(conf), TieBreak.ADDRESS, new Region("all", 0, 512 * MiB));
    SplittableRandom random = new SplittableRandom(conf.hashCode());
    long[] live = new long[4096];
    int liveCount = 0;
    long refusals = 0;
    for (int op = 0; op < 20_000; op++) {
      if (liveCount > 0 && random.nextDouble() < 0.4) {
        int victim = random.nextInt(liveCount);
        m.free(live[victim]);
        live[victim] = live[--liveCount];
      } else {
        long size = random.nextInt(4) == 0 ? 1 + random.nextInt((int) MiB) : MiB + random.nextLong(48 * MiB);
        AllocOutcome o = m.allocate(new AllocRequest(size, Tag.KV, true, random.nextInt(8) == 0 ? 3 : 0));
        if (o instanceof AllocOutcome.Allocated a) {
          live[liveCount++] = a.handle();
        } else {
          refusals++;
        }
      }
      int at = op;
      assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes(), () -> "event " + at);
      if (op % 16 == 0) {
        m.checkInvariants();
      }
    }
    m.checkInvariants();
    assertTrue(refusals > 1000, "the device stayed full (" + refusals + " refusals)");
  }

  @Test
  void restoredSegmentsAreTrackedFromTheStart() {
    CachingAllocator m = new CachingAllocator(TorchAllocConf.parse(""), TieBreak.ADDRESS, new Region("all", 0, 200 * MiB));
    SegmentLayout.Block allocated = new SegmentLayout.Block(0, 10 * MiB, 10 * MiB, SegmentLayout.State.ACTIVE_ALLOCATED);
    SegmentLayout.Block freeTail = new SegmentLayout.Block(10 * MiB, 10 * MiB, 0, SegmentLayout.State.INACTIVE);
    long[] split = m.restoreSegment(new SegmentLayout(0, 20 * MiB, "large", 0, false, List.of(allocated, freeTail)));
    m.restoreSegment(
        new SegmentLayout(60 * MiB, 40 * MiB, "large", 0, false, List.of(new SegmentLayout.Block(60 * MiB, 40 * MiB, 0, SegmentLayout.State.INACTIVE))));
    m.restoreSegment(
        new SegmentLayout(140 * MiB, 2 * MiB, "small", 0, false, List.of(new SegmentLayout.Block(140 * MiB, 2 * MiB, 0, SegmentLayout.State.INACTIVE))));
    m.checkInvariants();
    // Blocking: only [0, 20); the whole free segments at 60 and 140 MiB join the gaps around them.
    assertEquals(180 * MiB, m.largestFreeBytes());
    assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes());
    AllocOutcome.Allocated a = (AllocOutcome.Allocated) m.allocate(AllocRequest.of(30 * MiB, Tag.KV));
    m.checkInvariants();
    assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes());
    m.free(split[0]);
    m.free(a.handle());
    m.checkInvariants();
    assertEquals(200 * MiB, m.largestFreeBytes(), "every segment is whole and free");
    assertTrue(m.releaseSegmentAt(60 * MiB));
    m.checkInvariants();
    assertEquals(m.largestFreeBytesByWalk(), m.largestFreeBytes());
  }

  /** The driver's runs against a walk, under random cudaMalloc, cudaFree, adoption and marking. */
  @Property(tries = 200)
  void theDriversRunsEqualAWalkAfterEveryCall(@ForAll("driverOps") List<Integer> ops, @ForAll boolean unaligned) {
    RegionDriver d = new RegionDriver(unaligned ? new Region("kv", MiB + 512, 121 * MiB) : new Region("all", 0, 120 * MiB));
    Set<Long> releasable = new HashSet<>();
    TreeMap<Long, Long> segments = new TreeMap<>();
    for (int op : ops) {
      int kind = Math.floorMod(op, 4);
      int arg = Math.floorDiv(op, 4);
      if (kind == 0) {
        long address = d.malloc((1 + arg % 24) * MiB, 0);
        if (address >= 0) {
          segments.put(address, (1 + arg % 24) * MiB);
        }
      } else if (kind == 3 && arg % 5 == 0) {
        // Adopt a range the driver has free, when there is one at a 2 MiB step of the region.
        long size = (1 + arg % 6) * 2 * MiB;
        for (long at = d.baseBytes(); at + size <= d.baseBytes() + d.capacityBytes(); at += 2 * MiB) {
          Long below = segments.floorKey(at + size - 1);
          if (below == null || below + RegionDriver.GRANULE_BYTES * ((segments.get(below) + RegionDriver.GRANULE_BYTES - 1) / RegionDriver.GRANULE_BYTES) <= at) {
            if (d.freeBytes() >= size) {
              d.adopt(at, size);
              segments.put(at, size);
            }
            break;
          }
        }
      } else if (!segments.isEmpty()) {
        List<Long> starts = new ArrayList<>(segments.keySet());
        long address = starts.get(arg % starts.size());
        if (kind == 1) {
          d.free(address, segments.remove(address));
          releasable.remove(address);
        } else {
          boolean mark = !releasable.contains(address);
          d.markReleasable(address, mark);
          if (mark) {
            releasable.add(address);
          } else {
            releasable.remove(address);
          }
        }
      }
      assertEquals(null, d.checkReleasable(releasable::contains));
      assertEquals(d.largestMallocBytes(releasable::contains), d.largestMallocBytes());
      assertEquals(null, d.checkFreeRanges("driver"));
    }
  }

  @Provide
  Arbitrary<List<Integer>> driverOps() {
    return Arbitraries.integers().between(0, 4000).list().ofMinSize(1).ofMaxSize(200);
  }

  @Test
  void emptyCacheReleasesWholeSegmentsInPoolOrder() {
    Harness h = new Harness("", 2048 * MiB);
    SplittableRandom random = new SplittableRandom(7);
    List<AllocOutcome.Allocated> made = new ArrayList<>();
    List<long[]> wholeSegments = new ArrayList<>(); // stream, size, address, small (1/0)
    for (int i = 0; i < 60; i++) {
      long stream = random.nextInt(3) == 0 ? 5 : 0;
      long size = random.nextInt(4) == 0 ? 4096 : (10 + random.nextInt(6)) * MiB;
      made.add(h.alloc(size, stream));
    }
    AllocOutcome.Allocated keep = h.alloc(3 * MiB); // splits a 20 MiB segment, which stays
    for (int i : random.ints(0, made.size()).distinct().limit(made.size()).toArray()) {
      h.free(made.get(i));
    }
    for (SegmentLayout s : h.model.layout()) {
      if (s.blocks().size() == 1 && s.blocks().get(0).state() == SegmentLayout.State.INACTIVE) {
        wholeSegments.add(new long[] {s.stream(), s.sizeBytes(), s.addressBytes(), s.pool().equals("small") ? 1 : 0});
      }
    }
    // release_cached_blocks: the large pool, then the small one; each in (stream, size, address) order.
    wholeSegments.sort(
        Comparator.<long[]>comparingLong(s -> s[3]).thenComparing((a, b) -> Long.compareUnsigned(a[0], b[0])).thenComparingLong(s -> s[1]).thenComparingLong(s -> s[2]));
    List<String> expected = new ArrayList<>();
    for (long[] s : wholeSegments) {
      expected.add("segment_free " + s[2] / MiB + " " + s[1] / MiB);
    }
    h.events.clear();
    h.model.emptyCache();
    h.model.checkInvariants();
    assertTrue(expected.size() > 40);
    assertEquals(expected, h.events);
    assertEquals(20 * MiB, h.model.stats().reservedBytes(), "only the split segment of 'keep' stays");
    h.free(keep);
  }
}
