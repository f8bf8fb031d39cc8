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
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.AtomicFiles;

/**
 * The result folder of a sweep ({@code kvsim sweep}): one file per finished cell under {@value
 * #CELLS}, so an interrupted sweep resumes where it stopped, and the tidy table of every cell —
 * {@value #CSV_FILE} and {@value #JSON_FILE} (format {@value #FORMAT}), one row per cell in the
 * grid's order, one column per parameter and summary metric — that notebooks and reports read.
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

  private static final ObjectMapper JSON = new ObjectMapper();

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
   * lists the files in the folder's marker.
   *
   * @param config the sweep's configuration echo (grid file, cell count)
   */
  public static void write(Path dir, List<String> keys, Map<String, Object> config) throws IOException {
    List<ObjectNode> rows = new ArrayList<>(keys.size());
    Set<String> columns = new LinkedHashSet<>();
    for (String key : keys) {
      String row = storedRow(dir, key);
      if (row == null) {
        throw new IllegalStateException("cell " + key + " has no stored row");
      }
      ObjectNode n = (ObjectNode) JSON.readTree(row);
      n.fieldNames().forEachRemaining(columns::add);
      rows.add(n);
    }
    AtomicFiles.write(dir.resolve(CSV_FILE), out -> writeCsv(out, columns, rows));
    AtomicFiles.write(dir.resolve(JSON_FILE), out -> writeJson(out, config, columns, rows));
    ResultFolder.seal(dir);
  }

  private static void writeCsv(OutputStream os, Set<String> columns, List<ObjectNode> rows) throws IOException {
    Writer w = new OutputStreamWriter(os, StandardCharsets.UTF_8);
    w.write(String.join(",", columns.stream().map(SweepTable::csvField).toList()));
    w.write('\n');
    StringBuilder sb = new StringBuilder();
    for (ObjectNode row : rows) {
      sb.setLength(0);
      for (Iterator<String> it = columns.iterator(); it.hasNext(); ) {
        JsonNode v = row.get(it.next());
        if (v != null && !v.isNull()) {
          sb.append(csvField(v.asText()));
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

  private static void writeJson(OutputStream out, Map<String, Object> config, Set<String> columns, List<ObjectNode> rows) throws IOException {
    try (JsonGenerator g = JSON.getFactory().createGenerator(out).useDefaultPrettyPrinter()) {
      g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
      g.writeStartObject();
      g.writeStringField("format", FORMAT);
      g.writeNumberField("version", VERSION);
      g.writeFieldName("config");
      JSON.writeValue(g, config);
      g.writeArrayFieldStart("columns");
      for (String c : columns) {
        g.writeString(c);
      }
      g.writeEndArray();
      g.writeArrayFieldStart("rows");
      for (ObjectNode row : rows) {
        JSON.writeTree(g, row);
      }
      g.writeEndArray();
      g.writeEndObject();
    }
  }
}
