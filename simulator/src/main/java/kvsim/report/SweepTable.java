package kvsim.report;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;

/**
 * The result folder of a sweep ({@code kvsim sweep}): one file per finished cell under {@value
 * #CELLS}, so an interrupted sweep resumes where it stopped, and the tidy table of every cell —
 * {@value #CSV_FILE} and {@value #JSON_FILE} (format {@value #FORMAT}), one row per cell in the
 * grid's order, one column per parameter and summary metric — that notebooks and reports read.
 *
 * <p>The table is {@link SweepTableResults}: {@link #write(Path, SweepTableResults)} writes it,
 * {@link #read} reads {@value #JSON_FILE} back.
 *
 * <p>A cell's file is named by a hash of its key (its parameters) and holds the key itself, so a
 * file is reused only for the very same cell, whatever else changed in the grid.
 */
public final class SweepTable {
  /** The subfolder of finished cells. */
  public static final String CELLS = "cells";
  /** The table as CSV. */
  public static final String CSV_FILE = "sweep.csv";
  /** The table as JSON. */
  public static final String JSON_FILE = "sweep.json";
  /** Format marker of {@value #JSON_FILE}. */
  public static final String FORMAT = "kvsim-sweep-table";
  /** Version of {@value #FORMAT}. */
  public static final int VERSION = 1;

  private static final ObjectMapper JSON = new ObjectMapper().registerModule(kvsim.core.PlainNumbers.MODULE); // Note [Integers as integers]

  private SweepTable() {}

  /** Returns the file that holds the cell with this key. */
  static Path cellFile(Path dir, String key) {
    long h = 0xcbf29ce484222325L; // 64-bit FNV-1a
    for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
      h = (h ^ (b & 0xff)) * 0x100000001b3L;
    }
    return dir.resolve(CELLS).resolve(String.format("%016x.json", h));
  }

  /** Returns the row stored for the cell with this key, or null when it has not run (or its file is unreadable). */
  public static String storedRow(Path dir, String key) throws IOException {
    Path f = cellFile(dir, key);
    JsonNode n;
    try {
      n = JSON.readTree(Files.readString(f, StandardCharsets.UTF_8));
    } catch (NoSuchFileException e) {
      return null;
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      return null; // a torn or foreign file: the cell runs again and its file is rewritten
    }
    if (n == null || !key.equals(n.path("key").asText(null)) || !n.path("row").isObject()) {
      return null;
    }
    return JSON.writeValueAsString(n.get("row"));
  }

  /** Stores a finished cell's row, atomically. */
  public static void storeRow(Path dir, String key, String rowJson) throws IOException {
    ObjectNode n = JSON.createObjectNode();
    n.put("key", key);
    n.set("row", JSON.readTree(rowJson));
    byte[] bytes = (JSON.writeValueAsString(n) + "\n").getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(cellFile(dir, key), out -> out.write(bytes));
  }

  /**
   * Writes the table of the cells with these keys, in this order, from their stored rows, and
   * lists the files in the folder's marker ({@link #results}, then {@link #write(Path,
   * SweepTableResults)}).
   *
   * @param config the sweep's configuration echo (grid file, cell count)
   */
  public static void write(Path dir, List<String> keys, Map<String, Object> config) throws IOException {
    write(dir, results(dir, keys, config));
  }

  /** Returns the table of the cells with these keys, in this order, from their stored rows. */
  @SuppressWarnings("unchecked")
  public static SweepTableResults results(Path dir, List<String> keys, Map<String, Object> config) throws IOException {
    List<SweepTableResults.Row> rows = new ArrayList<>(keys.size());
    for (String key : keys) {
      String row = storedRow(dir, key);
      if (row == null) {
        throw new IllegalStateException("cell " + key + " has no stored row");
      }
      rows.add(new SweepTableResults.Row(JSON.readValue(row, LinkedHashMap.class)));
    }
    return SweepTableResults.of(config, rows);
  }

  /**
   * Writes {@value #CSV_FILE} and {@value #JSON_FILE} of the table, checks that {@value #JSON_FILE}
   * reads back equal, and lists the files in the folder's marker.
   */
  public static void write(Path dir, SweepTableResults table) throws IOException {
    AtomicFiles.write(dir.resolve(CSV_FILE), out -> writeCsv(out, table));
    AtomicFiles.write(dir.resolve(JSON_FILE), out -> writeJson(out, table));
    SweepTableResults read;
    try {
      read = read(dir);
    } catch (InputException e) {
      throw new IllegalStateException("the sweep table just written does not read back: " + e.getMessage(), e);
    }
    if (!tree(read).equals(tree(table))) {
      throw new IllegalStateException("the sweep table just written reads back different");
    }
    ResultFolder.seal(dir);
  }

  /** Returns the table as the text of its JSON values (a number read back as another type prints the same). */
  private static String tree(SweepTableResults t) throws IOException {
    return JSON.writeValueAsString(List.of(t.config(), t.columns(), t.rows().stream().map(SweepTableResults.Row::values).toList()));
  }

  /**
   * Reads {@value #JSON_FILE} of a sweep's folder: the marker and version, {@code config} an
   * object, {@code columns} distinct non-empty strings, each row an object of listed columns whose
   * values are strings, numbers, booleans or null; no other field. Every problem is an {@link
   * InputException} naming the file and field.
   */
  @SuppressWarnings("unchecked")
  public static SweepTableResults read(Path dir) {
    JsonFile.requireFolder(dir);
    JsonFile f = new JsonFile(dir.resolve(JSON_FILE));
    JsonNode root = f.readObject();
    f.checkFormat(root, FORMAT);
    f.onlyFields(root, "", Set.of("format", "version", "config", "columns", "rows"));
    Map<String, Object> config = (Map<String, Object>) f.plain(f.object(root.get("config"), "config"));
    List<String> columns = new ArrayList<>();
    List<JsonNode> cs = f.array(root.get("columns"), "columns");
    for (int i = 0; i < cs.size(); i++) {
      String c = f.text(cs.get(i), "columns[" + i + "]");
      if (columns.contains(c)) {
        throw f.error("columns[" + i + "]", "'" + c + "' appears twice");
      }
      columns.add(c);
    }
    List<SweepTableResults.Row> rows = new ArrayList<>();
    List<JsonNode> rs = f.array(root.get("rows"), "rows");
    for (int i = 0; i < rs.size(); i++) {
      String at = "rows[" + i + "]";
      JsonNode r = f.object(rs.get(i), at);
      f.onlyFields(r, at, new LinkedHashSet<>(columns));
      for (Iterator<Map.Entry<String, JsonNode>> it = r.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (e.getValue().isContainerNode()) {
          throw f.error(at + "." + e.getKey(), "expected a string, number, boolean or null, found " + e.getValue());
        }
      }
      rows.add(new SweepTableResults.Row((Map<String, Object>) f.plain(r)));
    }
    return new SweepTableResults(config, columns, rows);
  }

  private static void writeCsv(OutputStream os, SweepTableResults table) throws IOException {
    List<String> columns = table.columns();
    Writer w = new OutputStreamWriter(os, StandardCharsets.UTF_8);
    w.write(String.join(",", columns.stream().map(SweepTable::csvField).toList()));
    w.write('\n');
    StringBuilder sb = new StringBuilder();
    for (SweepTableResults.Row row : table.rows()) {
      sb.setLength(0);
      for (Iterator<String> it = columns.iterator(); it.hasNext(); ) {
        JsonNode v = JSON.valueToTree(row.values().get(it.next()));
        if (v != null && !v.isNull()) {
          sb.append(csvField(v.isFloatingPointNumber() ? kvsim.core.PlainNumbers.text(v.doubleValue()) : v.asText()));
        }
        if (it.hasNext()) {
          sb.append(',');
        }
      }
      sb.append('\n');
      w.write(sb.toString());
    }
    w.flush();
  }

  private static String csvField(String s) {
    if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0) {
      return s;
    }
    return '"' + s.replace("\"", "\"\"") + '"';
  }

  private static void writeJson(OutputStream out, SweepTableResults table) throws IOException {
    try (JsonGenerator g = JSON.getFactory().createGenerator(out).useDefaultPrettyPrinter()) {
      g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
      g.writeStartObject();
      g.writeStringField("format", FORMAT);
      g.writeNumberField("version", VERSION);
      g.writeFieldName("config");
      JSON.writeValue(g, table.config());
      g.writeArrayFieldStart("columns");
      for (String c : table.columns()) {
        g.writeString(c);
      }
      g.writeEndArray();
      g.writeArrayFieldStart("rows");
      for (SweepTableResults.Row row : table.rows()) {
        JSON.writeValue(g, row.values());
      }
      g.writeEndArray();
      g.writeEndObject();
    }
  }
}
