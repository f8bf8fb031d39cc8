package kvsim.gpu.calibrate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.run.CalibrationFile;

/**
 * Reads the raw samples back from a calibration file that holds a {@code samples} section ({@code
 * kvsim gpu calibrate --samples FILE} refits a recorded calibration without a GPU). The file is
 * first read and checked whole by {@link CalibrationFile#read}, which checks the section's shape;
 * here it only becomes {@link Samples}.
 */
public final class SampleFile {
  private static final ObjectMapper JSON = new ObjectMapper();

  private SampleFile() {}

  /** Reads {@code file}'s samples; a file without a {@code samples} section is an error. */
  public static Samples read(Path file) {
    CalibrationFile.read(file);
    JsonNode root;
    try {
      root = JSON.readTree(Files.readString(file));
    } catch (IOException e) {
      throw new InputException(file + ": cannot read: " + e.getMessage());
    }
    JsonNode s = root.path("samples");
    if (!s.isObject()) {
      throw new InputException(file + ": samples: missing: this calibration file keeps no raw samples to fit");
    }
    List<Samples.Series> series = new ArrayList<>();
    for (String kind : Samples.KINDS.keySet()) {
      for (JsonNode row : s.path(kind)) {
        Map<String, Long> shape = new LinkedHashMap<>();
        for (String f : Samples.KINDS.get(kind)) {
          shape.put(f, row.get(f).asLong());
        }
        JsonNode ns = row.get("ns");
        long[] nanos = new long[ns.size()];
        for (int i = 0; i < nanos.length; i++) {
          nanos[i] = ns.get(i).asLong();
        }
        series.add(new Samples.Series(kind, shape, nanos));
      }
    }
    Map<String, String> skipped = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = s.path("skipped").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      skipped.put(e.getKey(), e.getValue().asText());
    }
    return new Samples(root.path("device").asText(null), root.path("driver").asText(null), root.path("cuda").asText(null), root.path("date").asText(null),
        s.path("granularity_bytes").asLong(0), s.path("total_bytes").asLong(0), series, skipped);
  }
}
