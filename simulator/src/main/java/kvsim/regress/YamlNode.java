package kvsim.regress;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.InputException;

/**
 * A node of a YAML file that knows its own line, so that every problem found while reading a suite
 * (an unknown field, a wrong type, an unknown allocator or metric) is reported as {@code
 * file:line: field: problem}, with the field as a path such as {@code scenarios[2].watch[0].metric}.
 *
 * <p>Note [Lines of YAML nodes]: Jackson's tree model keeps no locations, and {@code
 * config.WorkloadSpec} finds a key's line by searching the text, which works for a flat file but
 * not for a suite where {@code metric:} occurs on many lines. So the file is read twice: once as a
 * tree, once as a token stream whose parsing context gives each token's JSON pointer; the first
 * line seen for each pointer is the line of that node.
 */
final class YamlNode {
  private static final ObjectMapper YAML =
      new ObjectMapper(new YAMLFactory()).enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private final String source;
  private final JsonNode node;
  private final String pointer;
  private final String field;
  private final Map<String, Integer> lines;

  private YamlNode(String source, JsonNode node, String pointer, String field, Map<String, Integer> lines) {
    this.source = source;
    this.node = node;
    this.pointer = pointer;
    this.field = field;
    this.lines = lines;
  }

  /** Parses a YAML text; a syntax error is an InputException naming {@code source} and the line. */
  static YamlNode parse(String source, String text) {
    try {
      JsonNode root = YAML.readTree(text);
      if (root == null || root.isMissingNode() || root.isNull()) {
        throw InputException.at(source, 1, null, "empty file");
      }
      Map<String, Integer> lines = new HashMap<>();
      try (JsonParser p = YAML.getFactory().createParser(text)) {
        for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
          lines.putIfAbsent(p.getParsingContext().pathAsPointer().toString(), p.currentTokenLocation().getLineNr());
        }
      }
      return new YamlNode(source, root, "", "", lines);
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      throw InputException.at(source, line, null, "bad YAML: " + e.getOriginalMessage().split("\n")[0]);
    } catch (IOException e) {
      throw new InputException(source + ": cannot read: " + e.getMessage());
    }
  }

  /** Returns the file this node is in, as the user named it. */
  String source() {
    return source;
  }

  /** Returns this node's field path ({@code scenarios[0].name}); empty for the root. */
  String field() {
    return field;
  }

  /** Returns this node's line (1-based), or 0 when unknown. */
  int line() {
    Integer l = lines.get(pointer);
    return l == null ? 0 : l;
  }

  /** Returns an error at this node: {@code file:line: field: problem}. */
  InputException error(String problem) {
    return InputException.at(source, line(), field.isEmpty() ? null : field, problem);
  }

  /** Returns the child {@code key} of this mapping, or null when absent (or null in the file). */
  YamlNode get(String key) {
    JsonNode child = node.get(key);
    if (child == null || child.isNull()) {
      return null;
    }
    return new YamlNode(source, child, pointer + "/" + key, field.isEmpty() ? key : field + "." + key, lines);
  }

  /** Returns the child {@code key}, or throws an error at this node naming the missing field. */
  YamlNode require(String key) {
    YamlNode child = get(key);
    if (child == null) {
      throw InputException.at(source, line(), field.isEmpty() ? key : field + "." + key, "missing (required)");
    }
    return child;
  }

  /** Checks that this is a mapping whose keys are all in {@code known}. */
  YamlNode mapping(Set<String> known, String knownText) {
    if (!node.isObject()) {
      throw error("expected a mapping of fields (" + knownText + ")");
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!known.contains(key)) {
        YamlNode child = new YamlNode(source, node.get(key), pointer + "/" + key, field.isEmpty() ? key : field + "." + key, lines);
        throw child.error("unknown field (known: " + knownText + ")");
      }
    }
    return this;
  }

  /** Returns the keys of this mapping, in file order. */
  List<String> keys() {
    if (!node.isObject()) {
      throw error("expected a mapping");
    }
    List<String> out = new ArrayList<>();
    node.fieldNames().forEachRemaining(out::add);
    return out;
  }

  /** Returns the elements of this sequence. */
  List<YamlNode> elements() {
    if (!node.isArray()) {
      throw error("expected a list");
    }
    List<YamlNode> out = new ArrayList<>();
    for (int i = 0; i < node.size(); i++) {
      out.add(new YamlNode(source, node.get(i), pointer + "/" + i, field + "[" + i + "]", lines));
    }
    return out;
  }

  /** Returns this scalar as text (numbers and booleans as written). */
  String text() {
    if (!node.isValueNode()) {
      throw error("expected a single value, found a " + (node.isArray() ? "list" : "mapping"));
    }
    return node.asText();
  }

  /** Returns this scalar as a positive integer. */
  int positiveInt() {
    if (!node.canConvertToInt() || !node.isIntegralNumber() || node.asInt() < 1) {
      throw error("expected a positive integer, found '" + node.asText() + "'");
    }
    return node.asInt();
  }

  /** Returns the parsed tree, for digests. */
  JsonNode tree() {
    return node;
  }
}
