package kvsim.report;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.PlainNumbers;

/**
 * Result files' JSON written and read with Jackson's streaming generator and parser alone, byte for
 * byte and node for node as the result mapper ({@link ResultsWriter#json}) writes and reads them
 * (Note [Result files without the mapper]).
 *
 * <p>Note [Result files without the mapper]: the result mapper's first use in a process (its class
 * set-up, then serializers and deserializers found by reflection) cost about 0.06 s of a 0.45 s
 * seed sweep, which writes one {@code summary.json}, reads it back and prints its configuration in
 * its report. The writers' trees hold maps with string keys, lists, arrays of primitives, strings,
 * numbers, booleans and nulls; those are written here through the same generator with the same
 * pretty printer and the same rule for doubles ({@link PlainNumbers}), and read into the node types
 * the mapper's {@code readTree} gives (an int, long or big integer by magnitude, a double, text, a
 * boolean, null), then into plain values as its {@code convertValue} gives them. A tree that holds
 * anything else goes to the mapper whole. {@code JsonTreesProperties} holds all three to the mapper's
 * output on random trees.
 */
final class JsonTrees {
  private static final JsonFactory FACTORY = new JsonFactory();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private JsonTrees() {}

  /** A value of a kind written only by the mapper. */
  private static final class Other extends RuntimeException {
    Other() {
      super(null, null, false, false);
    }
  }

  /** Writes {@code tree} indented, as the result mapper's {@code writeValue} does. */
  static void writePretty(OutputStream out, Object tree) throws IOException {
    out.write(pretty(tree));
  }

  /** Returns {@code tree} indented, as the result mapper's {@code writeValueAsString} does. */
  static String prettyString(Object tree) throws IOException {
    return new String(pretty(tree), StandardCharsets.UTF_8);
  }

  private static byte[] pretty(Object tree) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream(4096);
    try (JsonGenerator g = FACTORY.createGenerator(b)) {
      g.setPrettyPrinter(new DefaultPrettyPrinter());
      write(g, tree);
    } catch (Other e) {
      return ResultsWriter.json().writeValueAsBytes(tree);
    }
    return b.toByteArray();
  }

  private static void write(JsonGenerator g, Object v) throws IOException {
    if (v == null) {
      g.writeNull();
    } else if (v instanceof String s) {
      g.writeString(s);
    } else if (v instanceof Map<?, ?> m) {
      g.writeStartObject();
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!(e.getKey() instanceof String k)) {
          throw new Other();
        }
        g.writeFieldName(k);
        write(g, e.getValue());
      }
      g.writeEndObject();
    } else if (v instanceof List<?> l) {
      g.writeStartArray();
      for (Object x : l) {
        write(g, x);
      }
      g.writeEndArray();
    } else if (v instanceof Double d) {
      double x = d;
      if (PlainNumbers.plain(x)) {
        g.writeNumber(PlainNumbers.text(x));
      } else {
        g.writeNumber(x);
      }
    } else if (v instanceof Integer i) {
      g.writeNumber(i.intValue());
    } else if (v instanceof Long l) {
      g.writeNumber(l.longValue());
    } else if (v instanceof Boolean z) {
      g.writeBoolean(z);
    } else if (v instanceof long[] a) {
      g.writeStartArray();
      for (long x : a) {
        g.writeNumber(x);
      }
      g.writeEndArray();
    } else if (v instanceof int[] a) {
      g.writeStartArray();
      for (int x : a) {
        g.writeNumber(x);
      }
      g.writeEndArray();
    } else {
      throw new Other(); // floats, big numbers, arrays of doubles, records, …: the mapper's own
    }
  }

  /** Reads one JSON value from {@code in} as the result mapper's {@code readTree} does: null where there is none. */
  static JsonNode read(InputStream in) throws IOException {
    try (JsonParser p = FACTORY.createParser(in)) {
      return p.nextToken() == null ? null : node(p);
    }
  }

  /** Returns a parser over {@code in}, as the result mapper's {@code createParser} makes it. */
  static JsonParser parser(InputStream in) throws IOException {
    return FACTORY.createParser(in);
  }

  /** Reads the value at {@code p}'s current token, as the result mapper's {@code readTree(p)} does. */
  static JsonNode node(JsonParser p) throws IOException {
    JsonToken t = p.currentToken();
    switch (t) {
      case START_OBJECT: {
        ObjectNode o = NODES.objectNode();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          p.nextToken();
          o.set(name, node(p));
        }
        return o;
      }
      case START_ARRAY: {
        ArrayNode a = NODES.arrayNode();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          a.add(node(p));
        }
        return a;
      }
      case VALUE_STRING:
        return NODES.textNode(p.getText());
      case VALUE_NUMBER_INT:
        return switch (p.getNumberType()) {
          case INT -> NODES.numberNode(p.getIntValue());
          case LONG -> NODES.numberNode(p.getLongValue());
          default -> NODES.numberNode(p.getBigIntegerValue());
        };
      case VALUE_NUMBER_FLOAT:
        return NODES.numberNode(p.getDoubleValue());
      case VALUE_TRUE:
        return NODES.booleanNode(true);
      case VALUE_FALSE:
        return NODES.booleanNode(false);
      case VALUE_NULL:
        return NODES.nullNode();
      default:
        throw new com.fasterxml.jackson.core.JsonParseException(p, "unexpected token " + t);
    }
  }

  /**
   * Converts a node that {@link #node} read to plain values, as the result mapper's {@code
   * convertValue(n, Object.class)} does: objects to linked hash maps, arrays to lists, numbers to
   * Integer, Long, BigInteger or Double as read, text, booleans, null.
   */
  static Object plain(JsonNode n) {
    switch (n.getNodeType()) {
      case OBJECT: {
        Map<String, Object> m = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          m.put(e.getKey(), plain(e.getValue()));
        }
        return m;
      }
      case ARRAY: {
        List<Object> l = new ArrayList<>(n.size());
        for (JsonNode x : n) {
          l.add(plain(x));
        }
        return l;
      }
      case STRING:
        return n.textValue();
      case NUMBER:
        return switch (n.numberType()) {
          case INT -> n.intValue();
          case LONG -> n.longValue();
          case BIG_INTEGER -> n.bigIntegerValue();
          case BIG_DECIMAL -> n.decimalValue();
          default -> n.doubleValue();
        };
      case BOOLEAN:
        return n.booleanValue();
      case NULL:
        return null;
      default:
        return ResultsWriter.json().convertValue(n, Object.class);
    }
  }
}
