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
  void controlCharactersUseShortEscapesOrUpperCaseHex() {
    JsonLine line = new JsonLine();
    line.put("s", "a\"b\\c\b\t\n\f\r\u0001\u001F/é");
    assertEquals("{\"s\":\"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u0001\\u001F/é\"}", line.toJson());
  }
}
