package kvsim.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.AtomicFiles;

/**
 * Writes a reproduction's result folder ({@code results/reproductions/NAME/}): {@code
 * reproduction.json} ({@code "format": "kvsim-reproduction"}, version 1: the name, title, the
 * comparison table and kvsim's numbers), {@code README.md} (the notes and the table, for reading on
 * the web), the result folder of each run it made (a seed sweep or a serving run, each with its own
 * report) and {@code report.html} (the table, then every run's report). All deterministic.
 */
public final class ReproductionFolder {
  /** The {@code format} of {@code reproduction.json}. */
  public static final String FORMAT = "kvsim-reproduction";

  /** Writes one run's result folder at the folder given. */
  @FunctionalInterface
  public interface Part {
    /** Writes the run's result folder, of its own kind, at {@code dir}. */
    void write(Path dir) throws IOException;
  }

  private ReproductionFolder() {}

  /**
   * Writes the folder at {@code target} and returns where it went.
   *
   * @param notes paragraphs separated by blank lines
   * @param parts the runs' result folders, by folder name, in order
   */
  public static Path write(
      ResultFolder.Target target,
      String name,
      String title,
      String notes,
      List<String> header,
      List<List<String>> rows,
      Map<String, Object> numbers,
      Map<String, Part> parts)
      throws IOException {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("format", FORMAT);
    json.put("version", ResultsReader.VERSION);
    json.put("name", name);
    json.put("title", title);
    json.put("columns", header);
    json.put("rows", rows);
    json.put("numbers", numbers);
    List<String> paragraphs = new ArrayList<>();
    for (String p : notes.strip().split("\n\\s*\n")) {
      paragraphs.add(p.replaceAll("\\s*\n\\s*", " ").strip());
    }
    return ResultFolder.write(target, tmp -> {
      byte[] bytes = ResultsWriter.json().writeValueAsBytes(json);
      AtomicFiles.write(tmp.resolve("reproduction.json"), o -> {
        o.write(bytes);
        o.write('\n');
      });
      StringBuilder md = new StringBuilder("# ").append(title).append("\n\n");
      for (String p : paragraphs) {
        md.append(p).append("\n\n");
      }
      md.append('|').append(String.join("|", header)).append("|\n|").append("---|".repeat(header.size())).append('\n');
      for (List<String> row : rows) {
        md.append('|').append(String.join("|", row)).append("|\n");
      }
      md.append("\nRegenerate with `./kvsim reproduce ").append(name).append("`; `report.html` shows the table and every run's charts; ")
          .append("the runs' result folders: ").append(String.join(", ", parts.keySet().stream().map(k -> "`" + k + "/`").toList())).append(".\n");
      byte[] text = md.toString().getBytes(StandardCharsets.UTF_8);
      AtomicFiles.write(tmp.resolve("README.md"), o -> o.write(text));
      for (Map.Entry<String, Part> e : parts.entrySet()) {
        e.getValue().write(tmp.resolve(e.getKey()));
      }
      HtmlReport.writeWithIntro(tmp, new HtmlReport.Intro(title, paragraphs, header, rows), List.copyOf(parts.keySet()));
    });
  }
}
