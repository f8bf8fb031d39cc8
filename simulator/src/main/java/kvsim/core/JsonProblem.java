package kvsim.core;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The JSON parser's complaints in kvsim's words: every reader of JSON text (traces, importers,
 * block scripts, calibration and profile files) puts {@link #plain} after its {@code file:line:}
 * instead of Jackson's message, which quotes Java types and character codes ("Unrecognized token
 * 'x': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')").
 * A message it does not know keeps its first line, with the parser's source location cut off.
 */
public final class JsonProblem {
  private static final String VALUES = "a string in double quotes, a number, an array, an object, true, false or null";
  private static final Pattern UNRECOGNIZED = Pattern.compile("^Unrecognized token '(.*)': was expecting .*", Pattern.DOTALL);
  private static final Pattern UNEXPECTED = Pattern.compile("^Unexpected character \\((.*?\\)?)\\)(?: in numeric value)?: (.*)$", Pattern.DOTALL);
  private static final Pattern QUOTED_CHAR = Pattern.compile("^'(.{1,2})' \\(code .*\\)$", Pattern.DOTALL);
  private static final Pattern ESCAPE = Pattern.compile("^Unrecognized character escape '(.{1,2})' \\(code .*", Pattern.DOTALL);
  private static final Pattern CTRL_CHAR = Pattern.compile("^\\(?CTRL-CHAR, code (\\d+)\\)?$");
  private static final Pattern DESERIALIZE = Pattern.compile("Cannot deserialize value of type `([^`]*)` from ([^:;(]*[^:;( ])[^;]*");
  private static final Pattern JAVA_NAME = Pattern.compile("`?(?:java|com\\.fasterxml)\\.[\\w.$]*\\.(\\w+)`?");
  private static final Pattern CLOSE = Pattern.compile("^Unexpected close marker '(.)': expected '(.)'.*");
  private static final Pattern OUT_OF_RANGE = Pattern.compile("^Numeric value \\((.*)\\) out of range of (?:long|int).*");

  private JsonProblem() {}

  /** Returns {@code 'x'} for Jackson's {@code 'x' (code 120)}, {@code control character 133} for {@code CTRL-CHAR, code 133}. */
  private static String character(String jackson) {
    Matcher q = QUOTED_CHAR.matcher(jackson);
    if (q.matches()) {
      String c = q.group(1);
      int cp = c.codePointAt(0);
      boolean printable = !Character.isISOControl(cp) && !Character.isWhitespace(cp) && Character.getType(cp) != Character.FORMAT
          && Character.getType(cp) != Character.LINE_SEPARATOR && Character.getType(cp) != Character.PARAGRAPH_SEPARATOR && cp != 0xFFFD;
      return printable ? "'" + c + "'" : String.format(Locale.ROOT, "character U+%04X", cp);
    }
    Matcher c = CTRL_CHAR.matcher(jackson);
    if (c.matches()) {
      return "control character " + c.group(1);
    }
    return jackson.replaceAll("\\s*\\(code [^)]*\\)", "");
  }

  /**
   * Returns a data-binding message without Java type names: {@code Cannot deserialize value of
   * type `java.lang.Long` from String "f": not a valid …} becomes {@code expected an integer, got
   * String "f"}; other Java names lose their packages.
   */
  public static String javaTypes(String message) {
    Matcher d = DESERIALIZE.matcher(message);
    StringBuilder b = new StringBuilder();
    while (d.find()) {
      d.appendReplacement(b, Matcher.quoteReplacement("expected " + typeWord(d.group(1)) + ", got " + d.group(2).replace("String ", "the text ")
          .replace("Object value", "a mapping").replace("Array value", "a list")));
    }
    d.appendTail(b);
    return JAVA_NAME.matcher(b.toString()).replaceAll("$1");
  }

  private static String typeWord(String javaType) {
    String t = javaType.replaceAll("<.*$", "").replaceAll("^.*\\.", "");
    return switch (t) {
      case "Long", "long", "Integer", "int", "Short", "short", "BigInteger" -> "an integer";
      case "Double", "double", "Float", "float", "BigDecimal" -> "a number";
      case "Boolean", "boolean" -> "true or false";
      case "String" -> "a string";
      case "Map", "LinkedHashMap", "HashMap", "TreeMap" -> "a mapping";
      case "List", "ArrayList", "Collection", "Set" -> "a list";
      default -> "a " + t;
    };
  }

  /** Returns Jackson's {@code getOriginalMessage()} in plain words, on one line. */
  public static String plain(String jacksonMessage) {
    String m = jacksonMessage == null ? "" : jacksonMessage;
    int nl = m.indexOf('\n');
    if (nl >= 0) {
      m = m.substring(0, nl);
    }
    m = m.replaceAll("\\s*\\(start marker at \\[Source.*$", "").replaceAll("\\s*at \\[Source.*$", "").strip();
    if (m.isEmpty()) {
      return "not valid JSON";
    }
    if (m.startsWith("Illegal unquoted character ((CTRL-CHAR, code 10))") || m.startsWith("Illegal unquoted character ((CTRL-CHAR, code 13))")) {
      return "a string is not closed before the end of the line (missing '\"')";
    }
    if (m.startsWith("Illegal unquoted character ((CTRL-CHAR, code ")) {
      String code = m.substring("Illegal unquoted character ((CTRL-CHAR, code ".length()).replaceAll("\\).*$", "");
      return "control character " + code + " inside a string; write it escaped, as \\u" + String.format(Locale.ROOT, "%04x", Integer.parseInt(code));
    }
    if (m.startsWith("Unexpected end-of-input")) {
      return "the line ends inside an object or array (missing '}' or ']')";
    }
    Matcher esc = ESCAPE.matcher(m);
    if (esc.matches()) {
      return "'\\" + esc.group(1) + "' is not a JSON escape (those are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX)";
    }
    Matcher u = UNRECOGNIZED.matcher(m);
    if (u.matches()) {
      return "'" + u.group(1) + "' is not a JSON value (expected " + VALUES + ")";
    }
    Matcher c = CLOSE.matcher(m);
    if (c.matches()) {
      return "'" + c.group(1) + "' where '" + c.group(2) + "' should close what was opened";
    }
    Matcher r = OUT_OF_RANGE.matcher(m);
    if (r.matches()) {
      return "the number " + r.group(1) + " is out of range (integers are 64-bit)";
    }
    Matcher x = UNEXPECTED.matcher(m);
    if (x.matches()) {
      String ch = character(x.group(1));
      String what = x.group(2);
      if (what.startsWith("was expecting double-quote to start field name")) {
        return "expected a field name in double quotes, found " + ch + " (a trailing comma?)";
      }
      if (what.startsWith("was expecting comma to separate Object entries")) {
        return "expected ',' between fields or '}' at the end, found " + ch;
      }
      if (what.startsWith("was expecting comma to separate Array entries")) {
        return "expected ',' between values or ']' at the end, found " + ch;
      }
      if (what.startsWith("was expecting a colon")) {
        return "expected ':' after the field name, found " + ch;
      }
      if (what.startsWith("expected a valid value") || what.startsWith("was expecting (JSON String")) {
        return ch + " cannot start a JSON value (expected " + VALUES + ")";
      }
      if (what.startsWith("Expected space separating root-level values")) {
        return "text after a value: " + ch;
      }
      return "unexpected " + ch + " (" + what.replaceAll("\\s*\\(.*$", "") + ")";
    }
    if (m.startsWith("Invalid numeric value") || m.startsWith("Leading zeroes")) {
      return "not a valid JSON number: " + Character.toLowerCase(m.charAt(0)) + m.substring(1);
    }
    if (m.startsWith("Non-standard token")) {
      return m.replace("Non-standard token", "the non-standard token").replaceAll(": enable .*$", "") + " is not JSON";
    }
    m = m.replaceAll("\\(('.{1,2}') \\(code [^)]*\\)\\)", "$1").replaceAll("\\(CTRL-CHAR, code (\\d+)\\)", "control character $1");
    m = javaTypes(m);
    m = m.replace("was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')", "expected " + VALUES);
    return Character.toLowerCase(m.charAt(0)) + m.substring(1);
  }
}
