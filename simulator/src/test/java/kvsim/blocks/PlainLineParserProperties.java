package kvsim.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.core.InputException;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * The plain-line parser agrees with Jackson's path (Note [Plain lines]): every line it reads,
 * Jackson reads to the same fields, and the plain shape itself is always read by it.
 */
class PlainLineParserProperties {
  private static final String[] KEYS = {"op", "req", "prompt", "n", "token", "", "a b", "op"};

  @Property(tries = 3000)
  void whatItReadsJacksonReadsTheSame(@ForAll long seed) {
    SplittableRandom rng = new SplittableRandom(seed);
    boolean plainOnly = rng.nextInt(3) == 0;
    String line = line(rng, plainOnly);
    if (!plainOnly && rng.nextInt(3) == 0) {
      line = corrupt(rng, line);
    }
    byte[] bytes = line.getBytes(StandardCharsets.US_ASCII);
    Map<String, Object> plain = PlainLineParser.parse(bytes, 0, bytes.length, ScriptLine.NULL);
    if (plainOnly) {
      assertNotNull(plain, "a plain line must be read directly: " + line);
    }
    if (plain == null) {
      return; // Jackson's to read or refuse
    }
    Map<String, Object> jackson;
    try {
      jackson = ScriptLine.jacksonFields("t.jsonl", 1, line);
    } catch (InputException e) {
      fail("read directly, refused by Jackson (" + e.getMessage() + "): " + line);
      return;
    }
    assertEquals(List.copyOf(jackson.keySet()), List.copyOf(plain.keySet()), line);
    for (String k : jackson.keySet()) {
      Object a = jackson.get(k);
      Object b = plain.get(k);
      if (a instanceof long[] x && b instanceof long[] y) {
        assertTrue(Arrays.equals(x, y), k + " in " + line);
      } else {
        assertEquals(a, b, k + " in " + line);
      }
    }
  }

  private static String line(SplittableRandom rng, boolean plainOnly) {
    StringBuilder sb = new StringBuilder();
    sb.append(blanks(rng)).append('{').append(blanks(rng));
    int n = rng.nextInt(6);
    for (int f = 0; f < n; f++) {
      if (f > 0) {
        sb.append(',').append(blanks(rng));
      }
      sb.append('"').append(KEYS[rng.nextInt(KEYS.length)]).append('"').append(blanks(rng)).append(':').append(blanks(rng));
      sb.append(value(rng, plainOnly)).append(blanks(rng));
    }
    sb.append('}').append(blanks(rng));
    return sb.toString();
  }

  private static String value(SplittableRandom rng, boolean plainOnly) {
    int kind = rng.nextInt(plainOnly ? 7 : 11);
    return switch (kind) {
      case 0 -> Long.toString(rng.nextLong(-1_000_000_000_000L, 1_000_000_000_000L));
      case 1 -> "\"" + text(rng) + "\"";
      case 2 -> rng.nextBoolean() ? "true" : "false";
      case 3 -> "null";
      case 4, 5 -> {
        List<String> items = new ArrayList<>();
        for (int k = rng.nextInt(5); k > 0; k--) {
          items.add(Long.toString(rng.nextLong(-99_999, 99_999)));
        }
        yield "[" + blanks(rng) + String.join("," + blanks(rng), items) + blanks(rng) + "]";
      }
      case 6 -> real(rng);
      case 7 -> "\"a\\\"b\\u0041\"";
      case 8 -> "{\"x\":1}";
      case 9 -> rng.nextBoolean() ? "123456789012345678901" : "-9223372036854775808";
      default -> "[1,\"x\"]";
    };
  }

  /** A number with a fraction, an exponent or both, as JSON writes it. */
  private static String real(SplittableRandom rng) {
    StringBuilder sb = new StringBuilder();
    if (rng.nextBoolean()) {
      sb.append('-');
    }
    sb.append(rng.nextInt(4) == 0 ? 0 : rng.nextLong(1, 1_000_000_000L));
    boolean fraction = rng.nextBoolean();
    if (fraction) {
      sb.append('.').append(rng.nextInt(4) == 0 ? "0" : Long.toString(rng.nextLong(0, 100_000_000_000L)));
    }
    if (!fraction || rng.nextBoolean()) {
      sb.append(rng.nextBoolean() ? 'e' : 'E').append(switch (rng.nextInt(3)) { case 0 -> "+"; case 1 -> "-"; default -> ""; });
      sb.append(rng.nextInt(10) == 0 ? rng.nextInt(300, 400) : rng.nextInt(30));
    }
    return sb.toString();
  }

  private static String text(SplittableRandom rng) {
    StringBuilder sb = new StringBuilder();
    for (int k = rng.nextInt(6); k > 0; k--) {
      char c = (char) rng.nextInt(0x20, 0x7F);
      sb.append(c == '"' || c == '\\' ? 'q' : c);
    }
    return sb.toString();
  }

  private static String blanks(SplittableRandom rng) {
    return switch (rng.nextInt(6)) {
      case 0 -> " ";
      case 1 -> "\t";
      case 2 -> "  ";
      default -> "";
    };
  }

  /** One random character deleted, doubled or replaced by one of JSON's. */
  private static String corrupt(SplittableRandom rng, String line) {
    if (line.isEmpty()) {
      return "x";
    }
    int at = rng.nextInt(line.length());
    String junk = String.valueOf("{}[]\",:0-.etfnx \f".charAt(rng.nextInt(17)));
    return switch (rng.nextInt(3)) {
      case 0 -> line.substring(0, at) + line.substring(at + 1);
      case 1 -> line.substring(0, at) + line.charAt(at) + line.substring(at);
      default -> line.substring(0, at) + junk + line.substring(at + 1);
    };
  }
}
