package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/**
 * {@link JsonTrees} writes, reads and converts result trees exactly as the result mapper does
 * (Note [Result files without the mapper]): the same bytes, the same node types, the same plain
 * values, on random trees of every kind of value the writers put in them, and on values it leaves
 * to the mapper.
 */
class JsonTreesProperties {
  private static final String[] KEYS = {"format", "version", "p10", "a \"quoted\" key", "tab\there", "ünïcödé", "€", "line\nbreak", ""};
  private static final String[] TEXTS = {"", "kvsim", "h100-80", "slash/and\\back", "\u0001\u001f", "emoji \uD83D\uDE00", "<html>&amp;"};
  private static final double[] DOUBLES = {0.0, -0.0, 1.0, 0.1, 1e-7, 9999999.0, 1e7, 12345678.9, 1.5e300, -2.5e-300, Double.MIN_VALUE,
      Double.MAX_VALUE, 0.985, 1.0 / 3, Double.NaN, Double.POSITIVE_INFINITY};

  private static Object value(SplittableRandom r, int depth) {
    int kind = r.nextInt(depth > 3 ? 9 : 12);
    return switch (kind) {
      case 0 -> null;
      case 1 -> TEXTS[r.nextInt(TEXTS.length)];
      case 2 -> r.nextInt();
      case 3 -> r.nextBoolean() ? r.nextLong() : (long) r.nextInt(1000);
      case 4 -> DOUBLES[r.nextInt(DOUBLES.length)];
      case 5 -> r.nextDouble() * Math.pow(10, r.nextInt(-12, 14)) * (r.nextBoolean() ? 1 : -1);
      case 6 -> r.nextBoolean();
      case 7 -> r.longs(r.nextInt(4)).toArray();
      case 8 -> r.ints(r.nextInt(4)).toArray();
      case 9, 10 -> {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = r.nextInt(5); i > 0; i--) {
          m.put(KEYS[r.nextInt(KEYS.length)] + (r.nextInt(3) == 0 ? "" : i), value(r, depth + 1));
        }
        yield m;
      }
      default -> {
        List<Object> l = new ArrayList<>();
        for (int i = r.nextInt(5); i > 0; i--) {
          l.add(value(r, depth + 1));
        }
        yield l;
      }
    };
  }

  private static Map<String, Object> tree(long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("format", "kvsim-test");
    for (int i = r.nextInt(6); i >= 0; i--) {
      root.put("k" + i, value(r, 0));
    }
    return root;
  }

  private static byte[] ours(Object tree) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    JsonTrees.writePretty(b, tree);
    return b.toByteArray();
  }

  @Property(tries = 400)
  void writesTheMappersBytes(@ForAll long seed) throws IOException {
    Map<String, Object> tree = tree(seed);
    byte[] mapper = ResultsWriter.json().writeValueAsBytes(tree);
    assertArrayEquals(mapper, ours(tree), () -> new String(mapper, StandardCharsets.UTF_8));
    assertEquals(new String(mapper, StandardCharsets.UTF_8), JsonTrees.prettyString(tree));
  }

  @Property(tries = 400)
  void readsTheMappersNodesAndPlainValues(@ForAll long seed) throws IOException {
    byte[] json = ResultsWriter.json().writeValueAsBytes(tree(seed));
    JsonNode mapper = ResultsWriter.json().readTree(json);
    JsonNode read = JsonTrees.read(new ByteArrayInputStream(json));
    assertSameNodes(mapper, read, "$");
    assertEquals(ResultsWriter.json().convertValue(mapper, Object.class), JsonTrees.plain(read));
  }

  /** Equal values of the same node classes all the way down (JsonNode.equals alone lets an int equal a long in places). */
  private static void assertSameNodes(JsonNode want, JsonNode got, String at) {
    assertEquals(want.getClass(), got.getClass(), at);
    assertEquals(want, got, at);
    if (want.isObject()) {
      assertEquals(List.copyOf(iterable(want.fieldNames())), List.copyOf(iterable(got.fieldNames())), at);
      for (Iterator<String> it = want.fieldNames(); it.hasNext(); ) {
        String k = it.next();
        assertSameNodes(want.get(k), got.get(k), at + "." + k);
      }
    } else if (want.isArray()) {
      for (int i = 0; i < want.size(); i++) {
        assertSameNodes(want.get(i), got.get(i), at + "[" + i + "]");
      }
    }
  }

  private static List<String> iterable(Iterator<String> it) {
    List<String> l = new ArrayList<>();
    it.forEachRemaining(l::add);
    return l;
  }

  @Test
  void valuesOfOtherKindsAreTheMappersOwn() throws IOException {
    Map<String, Object> tree = new LinkedHashMap<>();
    tree.put("float", 0.1f);
    tree.put("doubles", new double[] {1.5, 1e9});
    tree.put("big", new java.math.BigInteger("123456789012345678901234567890"));
    tree.put("keyed", Map.of(7, "seven"));
    assertArrayEquals(ResultsWriter.json().writeValueAsBytes(tree), ours(tree));
  }

  @Test
  void readsBigNumbersAndDuplicateKeysAsTheMapper() throws IOException {
    for (String json : List.of("{\"a\":123456789012345678901234567890,\"b\":-9223372036854775808,\"c\":2147483648}",
        "{\"a\":1,\"a\":2.5,\"b\":[],\"c\":{}}", "[1, 2.0, \"x\", null, true]", "7", "\"text\"")) {
      byte[] b = json.getBytes(StandardCharsets.UTF_8);
      JsonNode mapper = ResultsWriter.json().readTree(b);
      assertSameNodes(mapper, JsonTrees.read(new ByteArrayInputStream(b)), json);
      assertEquals(ResultsWriter.json().convertValue(mapper, Object.class), JsonTrees.plain(mapper), json);
    }
    assertNull(JsonTrees.read(new ByteArrayInputStream(new byte[0])));
  }
}
