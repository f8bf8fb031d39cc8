package kvsim.tune;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The ranking of tried settings: the Pareto front, and the recommendation among near-equals. */
class AllocatorTunerTest {
  private static final TuneSpace SPACE = TuneSpace.of("pytorch-caching", false);

  private static AllocatorTuner.Tried tried(int order, Map<String, String> changes, long ooms, long peak, long nanos) {
    Map<String, String> s = new LinkedHashMap<>(SPACE.defaults());
    s.putAll(changes);
    Map<String, Object> row = Map.of("oom_count", ooms, "reserved_bytes.peak", peak, "modelled_allocator_nanos", nanos);
    return new AllocatorTuner.Tried(order, "grid", s, new ObjectMapper().valueToTree(row));
  }

  @Test
  void theFrontKeepsTheCellsNoOtherBeatsOnBothPeakAndTime() {
    List<AllocatorTuner.Tried> all = List.of(
        tried(0, Map.of(), 0, 10, 5),
        tried(1, Map.of("max_split_size_mb", "64"), 0, 10, 4),
        tried(2, Map.of("max_split_size_mb", "128"), 0, 12, 3),
        tried(3, Map.of("max_split_size_mb", "256"), 0, 13, 3),
        tried(4, Map.of("expandable_segments", "True"), 2, 1, 1));
    assertEquals(List.of(1, 2), AllocatorTuner.front(all, SPACE).stream().map(AllocatorTuner.Tried::order).toList());
  }

  @Test
  void theRecommendationIsTheSimplestWithinOnePercentOfTheBestTimeAtTheSamePeak() {
    AllocatorTuner.Tried best = tried(0, Map.of("expandable_segments", "True", "roundup_power2_divisions", "16"), 0, 100, 100_000);
    AllocatorTuner.Tried simpler = tried(1, Map.of("expandable_segments", "True"), 0, 100, 100_900);
    AllocatorTuner.Tried slower = tried(2, Map.of("roundup_power2_divisions", "2"), 0, 100, 101_100);
    AllocatorTuner.Tried larger = tried(3, Map.of(), 0, 101, 100_000);
    assertEquals(1, AllocatorTuner.recommend(List.of(best, simpler, slower, larger), best, SPACE).order());
    assertEquals(0, AllocatorTuner.recommend(List.of(best, slower, larger), best, SPACE).order());
  }
}
