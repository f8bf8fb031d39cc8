package kvsim.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.CharRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** Output lines are the bytes of Jackson's text for the same tree (Note [Output lines without a tree]). */
class JsonLineTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Property(tries = 300)
  void anyStringsNumbersAndArraysAreWrittenAsJacksonWritesThem(
      @ForAll @CharRange(from = 0, to = 0x2FF) String key,
      @ForAll @CharRange(from = 0, to = 0xFFFF) String text,
      @ForAll long number,
      @ForAll double real,
      @ForAll boolean flag,
      @ForAll @Size(max = 20) int[] ints) throws Exception {
    JsonLine line = new JsonLine();
    ObjectNode node = JSON.createObjectNode();
    line.put("n", number);
    node.put("n", number);
    line.put(key, text);
    node.put(key, text);
    line.put("flag", flag);
    node.put("flag", flag);
    if (Double.isFinite(real)) {
      line.put("real", real);
      node.put("real", real);
    }
    line.putNull("nothing");
    node.putNull("nothing");
    line.putInts("ints", ints);
    ArrayNode a = node.putArray("ints");
    for (int v : ints) {
      a.add(v);
    }
    JsonLine inner = line.putObject("inner");
    ObjectNode innerNode = node.putObject("inner");
    JsonLine.Array pairs = inner.putArray("pairs");
    ArrayNode pairsNode = innerNode.putArray("pairs");
    JsonLine.Array pair = pairs.addArray();
    ArrayNode pairNode = pairsNode.addArray();
    pair.add(number);
    pairNode.add(number);
    pair.add(text);
    pairNode.add(text);
    JsonLine o = pairs.addObject();
    ObjectNode on = pairsNode.addObject();
    o.put("k", 1);
    on.put("k", 1);
    line.put("n", number + 1); // put again: keeps its place
    node.put("n", number + 1);
    // The bytes a UTF-8 writer writes for Jackson's text (an unpaired surrogate becomes '?').
    assertArrayEquals(JSON.writeValueAsString(node).getBytes(StandardCharsets.UTF_8), line.toJson().getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void numbersAreWrittenAsLongToStringWritesThemAroundEveryDigitCount() {
    // Note [Small decimals]: table groups below 10,000, cut points at 10^4 and 10^8, and longs.
    java.util.List<Long> values = new java.util.ArrayList<>();
    for (long v = 0; v <= 120_000; v++) {
      values.add(v);
    }
    long p = 1;
    for (int e = 1; e <= 18; e++) { // 10 … 10^18
      p *= 10;
      for (long d = -2; d <= 2; d++) {
        values.add(p + d);
        values.add(-(p + d));
      }
    }
    for (long v : new long[] {100_000_000L * 21 + 47_483_647, Integer.MAX_VALUE, Integer.MAX_VALUE + 1L, Integer.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, -1}) {
      values.add(v);
    }
    JsonLine line = new JsonLine();
    JsonLine.Array a = line.putArray("v");
    StringBuilder expected = new StringBuilder("{\"v\":[");
    int[] ints = new int[120_001];
    StringBuilder expectedInts = new StringBuilder("[");
    for (int k = 0; k < values.size(); k++) {
      a.add(values.get(k));
      expected.append(k == 0 ? "" : ",").append(values.get(k));
    }
    for (int k = 0; k < ints.length; k++) {
      ints[k] = k * 17_891; // wraps past Integer.MAX_VALUE into negatives too
      expectedInts.append(k == 0 ? "" : ",").append(ints[k]);
    }
    line.putInts("ints", ints);
    line.put("max", Integer.MAX_VALUE);
    assertEquals(expected + "],\"ints\":" + expectedInts + "],\"max\":2147483647}", line.toJson());
  }

  @Test
  void controlCharactersUseShortEscapesOrUpperCaseHex() {
    JsonLine line = new JsonLine();
    line.put("s", "a\"b\\c\b\t\n\f\r\u0001\u001F/é");
    assertEquals("{\"s\":\"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u0001\\u001F/é\"}", line.toJson());
  }
}
