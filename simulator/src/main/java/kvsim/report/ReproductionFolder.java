package kvsim.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;

/**
 * Writes a reproduction's result folder ({@code results/reproductions/NAME/}): {@code
 * reproduction.json} ({@code "format": "kvsim-reproduction"}, version 1: the name, title, the
 * comparison table and kvsim's numbers), {@code README.md} (the notes and the table, for reading on
 * the web), the result folder of each run it made (a seed sweep or a serving run, each with its own
 * report) and {@code report.html} (the table, then every run's report). All deterministic. {@link
 * #read} gives {@code reproduction.json} back as the {@link ReproductionResults} written.
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

  /** The file holding the table and numbers. */
  public static final String FILE = "reproduction.json";

  /**
   * Writes the folder at {@code target} and returns where it went.
   *
   * @param notes paragraphs separated by blank lines
   * @param parts the runs' result folders, by folder name, in order
   */
  public static Path write(ResultFolder.Target target, ReproductionResults results, String notes, Map<String, Part> parts) throws IOException {
    String name = results.name();
    String title = results.title();
    List<String> header = results.columns();
    List<List<String>> rows = results.rows();
    Map<String, Object> json = json(results);
    List<String> paragraphs = new ArrayList<>();
    for (String p : notes.strip().split("\n\\s*\n")) {
      paragraphs.add(p.replaceAll("\\s*\n\\s*", " ").strip());
    }
    return ResultFolder.write(target, tmp -> {
      byte[] bytes = ResultsWriter.json().writeValueAsBytes(json);
      AtomicFiles.write(tmp.resolve(FILE), o -> {
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
      readBack(tmp, results);
    });
  }

  /** Returns the tree of {@code reproduction.json}: the markers, the name, title, columns, rows and numbers. */
  public static Map<String, Object> json(ReproductionResults results) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("format", FORMAT);
    json.put("version", ResultsReader.VERSION);
    json.put("name", results.name());
    json.put("title", results.title());
    json.put("columns", results.columns());
    json.put("rows", results.rows());
    json.put("numbers", results.numbers());
    return json;
  }

  /**
   * Reads the folder's file back: what was written must read back the same (as JSON: a number
   * written from a {@code long} reads back as an {@code Integer}); anything else is a bug of the
   * writer.
   */
  private static void readBack(Path dir, ReproductionResults written) throws IOException {
    ReproductionResults read;
    try {
      read = read(dir);
    } catch (InputException e) {
      throw new IllegalStateException("the reproduction just written does not read back: " + e.getMessage(), e);
    }
    String a = ResultsWriter.json().writeValueAsString(json(read));
    String b = ResultsWriter.json().writeValueAsString(json(written));
    if (!a.equals(b)) {
      throw new IllegalStateException("the reproduction just written reads back different: " + a + " != " + b);
    }
  }

  /**
   * Reads {@code reproduction.json} of a reproduction's folder: the marker and version, a non-empty
   * name and title, the columns (non-empty strings), each row one string per column, and {@code
   * numbers} an object; no other field.
   */
  @SuppressWarnings("unchecked")
  public static ReproductionResults read(Path dir) {
    JsonFile.requireFolder(dir);
    JsonFile f = new JsonFile(dir.resolve(FILE));
    JsonNode root = f.readObject();
    f.checkFormat(root, FORMAT);
    f.onlyFields(root, "", Set.of("format", "version", "name", "title", "columns", "rows", "numbers"));
    String name = f.text(root.get("name"), "name");
    String title = f.text(root.get("title"), "title");
    List<String> columns = new ArrayList<>();
    List<JsonNode> cs = f.array(root.get("columns"), "columns");
    for (int i = 0; i < cs.size(); i++) {
      columns.add(f.text(cs.get(i), "columns[" + i + "]"));
    }
    List<List<String>> rows = new ArrayList<>();
    List<JsonNode> rs = f.array(root.get("rows"), "rows");
    for (int i = 0; i < rs.size(); i++) {
      List<JsonNode> cells = f.array(rs.get(i), "rows[" + i + "]");
      if (cells.size() != columns.size()) {
        throw f.error("rows[" + i + "]", "expected " + columns.size() + " cells (one per column), found " + cells.size());
      }
      List<String> row = new ArrayList<>();
      for (int j = 0; j < cells.size(); j++) {
        JsonNode c = cells.get(j);
        if (!c.isTextual()) {
          throw f.error("rows[" + i + "][" + j + "]", "expected a string, found " + c);
        }
        row.add(c.textValue());
      }
      rows.add(row);
    }
    Map<String, Object> numbers = (Map<String, Object>) f.plain(f.object(root.get("numbers"), "numbers"));
    return new ReproductionResults(name, title, columns, rows, numbers);
  }
}
