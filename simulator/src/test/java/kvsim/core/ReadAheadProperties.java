package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * {@link ReadAhead} hands its consumer the stream's items in order, whatever the batch size and
 * the batches ahead, then the end, or the stream's failure after every item before it; closing it
 * part-way stops its thread.
 */
class ReadAheadProperties {
  @Property(tries = 300)
  void givesTheItemsInOrderThenTheEndOrTheFailure(
      @ForAll @IntRange(min = 0, max = 500) int items,
      @ForAll @IntRange(min = 1, max = 40) int batch,
      @ForAll @IntRange(min = 1, max = 4) int batches,
      @ForAll @IntRange(min = -1, max = 500) int failAt,
      @ForAll @IntRange(min = 0, max = 600) int stopAfter,
      @ForAll boolean failWithIo) {
    int[] read = {0};
    ReadAhead.Reader<Integer> reader = () -> {
      int i = read[0]++;
      if (i == failAt) {
        if (failWithIo) {
          throw new IOException("bad item " + i);
        }
        throw new InputException("bad item " + i);
      }
      return i < items ? i : null;
    };
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < items && i != failAt; i++) {
      expected.add(Integer.toString(i));
    }
    expected.add(failAt >= 0 && failAt <= items ? "bad item " + failAt : "end");
    List<String> got = new ArrayList<>();
    ReadAhead<Integer> ahead = new ReadAhead<>("test-read-ahead", reader, batch, batches);
    try (ahead) {
      while (got.size() < stopAfter) {
        Integer item = ahead.next();
        got.add(item == null ? "end" : item.toString());
        if (item == null) {
          break;
        }
      }
    } catch (IOException | InputException e) {
      got.add(e.getMessage());
    }
    assertEquals(expected.subList(0, Math.min(expected.size(), Math.max(got.size(), 0))), got);
    if (stopAfter > expected.size()) {
      assertEquals(expected, got);
    }
    assertFalse(Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("test-read-ahead") && t.isAlive()), "the reader thread ended");
  }
}
