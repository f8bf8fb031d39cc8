package kvsim.report;

import java.util.List;

/** Small helpers for writing HTML text: escaping and tables. */
final class Html {
  private Html() {}

  /** Escapes {@code &}, {@code <}, {@code >} and quotes. */
  static String escape(String s) {
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> sb.append("&amp;");
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '"' -> sb.append("&quot;");
        default -> sb.append(c);
      }
    }
    return sb.toString();
  }

  /**
   * Appends a table: a caption, a header row and body rows; cells that look numeric are aligned
   * right.
   */
  static void table(StringBuilder out, String caption, List<String> header, List<List<String>> rows) {
    out.append("<table>\n<caption>").append(escape(caption)).append("</caption>\n<thead><tr>");
    for (String h : header) {
      out.append("<th scope=\"col\">").append(escape(h)).append("</th>");
    }
    out.append("</tr></thead>\n<tbody>\n");
    for (List<String> row : rows) {
      out.append("<tr>");
      for (int i = 0; i < row.size(); i++) {
        String v = row.get(i);
        if (i == 0) {
          out.append("<th scope=\"row\">").append(escape(v)).append("</th>");
        } else {
          out.append(numeric(v) ? "<td class=\"n\">" : "<td>").append(escape(v)).append("</td>");
        }
      }
      out.append("</tr>\n");
    }
    out.append("</tbody>\n</table>\n");
  }

  private static boolean numeric(String v) {
    return !v.isEmpty() && (Character.isDigit(v.charAt(0)) || v.charAt(0) == '-' && v.length() > 1);
  }
}
