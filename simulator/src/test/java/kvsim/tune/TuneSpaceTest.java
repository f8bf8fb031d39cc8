package kvsim.tune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** The search space: PyTorch's conf syntax for the caching allocator, the ladders' neighbours. */
class TuneSpaceTest {
  @Test
  void aSettingIsItsNonDefaultKeysInPytorchSyntaxWhichTheParserAccepts() {
    TuneSpace s = TuneSpace.of("pytorch-caching", false);
    Map<String, String> m = new LinkedHashMap<>(s.defaults());
    assertEquals("", s.conf(m));
    assertEquals("leave PYTORCH_CUDA_ALLOC_CONF unset (the defaults are best here)", s.recommendation(m));
    m.put("expandable_segments", "True");
    m.put("max_split_size_mb", "128");
    m.put("garbage_collection_threshold", "0.8");
    assertEquals("expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8", s.conf(m));
    assertEquals("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8", s.recommendation(m));
    assertEquals(3, s.changed(m));
    TorchAllocConf c = TorchAllocConf.parse(s.conf(m));
    assertTrue(c.expandableSegments());
    assertEquals(128L << 20, c.maxSplitSizeBytes());
    assertEquals(0.8, c.garbageCollectionThreshold());
    assertEquals(Map.of("pytorch-caching.torch-alloc-conf", s.conf(m)), s.cellOptions(m));
  }

  @Test
  void everyValueOfEveryLadderParses() {
    TuneSpace s = TuneSpace.of("pytorch-caching", true);
    for (TuneSpace.Axis a : s.axes()) {
      for (String v : a.ladder()) {
        Map<String, String> m = new LinkedHashMap<>(s.defaults());
        m.put(a.name(), v);
        TorchAllocConf.parse(s.conf(m)); // throws on a value PyTorch's parser refuses
      }
      assertTrue(a.ladder().containsAll(a.grid()), a.name());
    }
    assertEquals(3, s.axes().get(3).grid().size(), "--grid full crosses the gc threshold");
    assertEquals(1, TuneSpace.of("pytorch-caching", false).axes().get(3).grid().size());
  }

  @Test
  void neighboursAreOneLadderStepOnOneAxis() {
    TuneSpace s = TuneSpace.of("pytorch-caching", false);
    Map<String, String> m = new LinkedHashMap<>(s.defaults());
    m.put("max_split_size_mb", "128");
    List<Map<String, String>> n = AllocatorTuner.neighbours(s, m);
    // expandable: True; max split: 96, 192; roundup (unset): 1; gc (unset): 0.5.
    assertEquals(5, n.size(), n.toString());
    assertEquals("96", n.get(1).get("max_split_size_mb"));
    assertEquals("192", n.get(2).get("max_split_size_mb"));
    for (Map<String, String> x : n) {
      assertEquals(1, x.entrySet().stream().filter(e -> !e.getValue().equals(m.get(e.getKey()))).count(), x.toString());
    }
  }

  @Test
  void otherAllocatorsAreWrittenAsSetOptionsAndUnknownOnesRefused() {
    TuneSpace s = TuneSpace.of("slab", false);
    Map<String, String> m = new LinkedHashMap<>(s.defaults());
    assertEquals("keep slab's defaults (they are best here)", s.recommendation(m));
    m.put("block-size", "4MiB");
    assertEquals("--set slab.block-size=4MiB", s.recommendation(m));
    assertFalse(s.torchConf());
    InputException e = assertThrows(InputException.class, () -> s.withValues("size", List.of("1MiB")));
    assertEquals("--values: unknown key 'size' for slab (known: block-size)", e.getMessage());
  }
}
