package kvsim.core;

/**
 * Bad user input: a malformed trace line, an unknown id, an unknown allocator name, a bad option.
 * The CLI prints {@link #getMessage()} as one line and exits with status 2. The message names the
 * file, the line and the field when they are known, in the form {@code file:line: field: problem}.
 *
 * <p>Note [One-line messages]: a message often quotes the input (an unknown field's name, a value of
 * the wrong type), and a JSON or YAML string may hold an escaped line break ({@code "a\nb"}). The
 * message keeps to one line whatever it quotes: a line feed or carriage return in it is written as
 * {@code \n} or {@code \r}. A quoted value may also be huge (a field name of 200,000 characters, a
 * CSV header of a megabyte); a message is cut after {@value #MAX_MESSAGE_CHARS} characters, saying
 * how many were left out. File, line and field come first, so they are always kept.
 */
public class InputException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  /** The longest message kept whole (Note [One-line messages]). */
  static final int MAX_MESSAGE_CHARS = 2000;

  public InputException(String message) {
    super(oneLine(message));
  }

  public InputException(String message, Throwable cause) {
    super(oneLine(message), cause);
  }

  /** Note [One-line messages]. */
  private static String oneLine(String message) {
    if (message == null) {
      return null;
    }
    String m = message;
    if (m.length() > MAX_MESSAGE_CHARS) {
      int cut = Character.isHighSurrogate(m.charAt(MAX_MESSAGE_CHARS - 1)) ? MAX_MESSAGE_CHARS - 1 : MAX_MESSAGE_CHARS;
      m = m.substring(0, cut) + "... (" + (m.length() - cut) + " more characters)";
    }
    if (m.indexOf('\n') >= 0 || m.indexOf('\r') >= 0) {
      m = m.replace("\r", "\\r").replace("\n", "\\n");
    }
    return m;
  }

  /** Returns an exception whose message is {@code source:line: field: problem}. */
  public static InputException at(String source, long line, String field, String problem) {
    StringBuilder sb = new StringBuilder(source);
    if (line > 0) {
      sb.append(':').append(line);
    }
    sb.append(": ");
    if (field != null) {
      sb.append(field).append(": ");
    }
    sb.append(problem);
    return new InputException(sb.toString());
  }
}
