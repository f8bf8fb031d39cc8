package kvsim.trace;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import kvsim.core.InputException;

/**
 * A plain comma-separated file read line by line: a header row naming the columns, then data rows
 * with as many fields. No quoting (the request logs kvsim imports have none: a quote is an error);
 * a {@code \r} before the newline is dropped. Columns are found by name, so others are ignored.
 */
final class CsvRows implements AutoCloseable {
  private final String source;
  private final BufferedReader in;
  private final List<String> columns;
  private long line = 1;
  private String[] fields;

  CsvRows(Path file, String noun) throws IOException {
    this.source = file.toString();
    if (Files.isDirectory(file)) {
      throw new InputException(file + ": is a folder, not a " + noun + " file");
    }
    try {
      this.in = new BufferedReader(new InputStreamReader(Files.newInputStream(file), StandardCharsets.UTF_8), 1 << 16);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    }
    String header = in.readLine();
    if (header == null) {
      in.close();
      throw InputException.at(source, 1, null, "empty file: expected a " + noun + " header row");
    }
    if (header.startsWith("\uFEFF")) {
      header = header.substring(1);
    }
    this.columns = Arrays.stream(strip(header).split(",", -1)).map(String::trim).toList();
  }

  /** Returns the index of the named column, or fails naming the columns there are. */
  int column(String name) {
    int i = columns.indexOf(name);
    if (i < 0) {
      throw InputException.at(source, 1, name, "no such column in the header (columns: " + String.join(", ", columns) + ")");
    }
    return i;
  }

  /** Reads the next data row; returns false at the end. */
  boolean next() throws IOException {
    String text = in.readLine();
    if (text == null) {
      return false;
    }
    line++;
    text = strip(text);
    if (text.indexOf('"') >= 0) {
      throw InputException.at(source, line, null, "quoted fields are not supported");
    }
    fields = text.split(",", -1);
    if (fields.length != columns.size()) {
      throw InputException.at(source, line, null, fields.length + " fields, but the header has " + columns.size() + " columns");
    }
    return true;
  }

  /** Returns field {@code i} of the current row. */
  String field(int i) {
    return fields[i];
  }

  /** Returns the current row's line number (the header is line 1). */
  long line() {
    return line;
  }

  private static String strip(String s) {
    return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
