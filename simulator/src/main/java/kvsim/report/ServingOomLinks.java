package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.AtomicFiles;
import kvsim.core.Bytes;

/**
 * The snapshots a serving run wrote with {@code --snapshot-at-oom}, as its result folder records
 * them ({@value #FILE}, only when one was written) and as its report links them: one line per
 * system with the file (relative to the folder), the moment and the refused size. A serving folder
 * has no memory map, so the line is the report's only mark of that moment.
 */
public final class ServingOomLinks {
  /** The file in a serving result folder. */
  public static final String FILE = "snapshots-at-oom.json";

  /** One system's snapshot: its file relative to the result folder, when and what was refused. */
  public record Link(String system, String file, double timeSeconds, long sizeBytes, String reason) {}

  private ServingOomLinks() {}

  /** Returns what writes {@value #FILE} into a result folder, or null when there is nothing to record. */
  public static AtomicFiles.FolderWriter writer(List<Link> links) {
    if (links.isEmpty()) {
      return null;
    }
    List<Map<String, Object>> rows = new ArrayList<>();
    for (Link l : links) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("system", l.system());
      row.put("file", l.file());
      row.put("time_s", l.timeSeconds());
      row.put("size_bytes", l.sizeBytes());
      row.put("reason", l.reason());
      rows.add(row);
    }
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("snapshots", rows);
    return dir -> AtomicFiles.write(dir.resolve(FILE), out -> {
      ResultsWriter.json().writeValue(out, root);
      out.write('\n');
    });
  }

  /** Returns the links recorded in {@code dir}, none where the folder has no {@value #FILE}. */
  static List<Link> read(Path dir) {
    Path file = dir.resolve(FILE);
    if (!Files.exists(file)) {
      return List.of();
    }
    JsonFile f = new JsonFile(file);
    JsonNode rows = f.readObject().get("snapshots");
    if (rows == null || !rows.isArray()) {
      throw f.error("snapshots", "expected an array");
    }
    List<Link> links = new ArrayList<>();
    for (JsonNode r : rows) {
      if (!r.path("system").isTextual() || !r.path("file").isTextual() || !r.path("time_s").isNumber() || !r.path("size_bytes").canConvertToLong()
          || !r.path("reason").isTextual()) {
        throw f.error("snapshots", "each entry needs system, file, reason (text), time_s and size_bytes (numbers)");
      }
      links.add(new Link(r.get("system").asText(), r.get("file").asText(), r.get("time_s").asDouble(), r.get("size_bytes").asLong(), r.get("reason").asText()));
    }
    return links;
  }

  /** Appends one paragraph per link to a report. */
  static void html(StringBuilder out, Path dir) {
    for (Link l : read(dir)) {
      out.append("<p class=\"oom-snapshot\">").append(Html.escape(l.system())).append(": Snapshot at first OOM: <a href=\"").append(Html.escape(l.file()))
          .append("\">").append(Html.escape(l.file())).append("</a>, open in memory_viz (at ").append(String.format(Locale.ROOT, "%.3f s", l.timeSeconds()))
          .append(", ").append(Html.escape(Bytes.format(l.sizeBytes()))).append(" refused, ").append(Html.escape(l.reason())).append(").</p>\n");
    }
  }
}
