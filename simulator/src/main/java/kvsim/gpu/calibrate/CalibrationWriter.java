package kvsim.gpu.calibrate;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Iterator;
import java.util.Map;
import kvsim.run.CalibrationFile;

/**
 * Writes a GPU calibration as a version 3 calibration file ({@link CalibrationFile}; README,
 * "Calibration files"): the device, driver, CUDA version and date, the fitted {@code forward},
 * {@code copies} and {@code latency} sections ({@link CalibrationFit}) and the raw {@code samples}
 * they were fitted on, one line per measured shape.
 */
public final class CalibrationWriter {
  private static final ObjectMapper JSON = new ObjectMapper();

  private CalibrationWriter() {}

  /** The file's text. */
  public static String write(Samples samples, CalibrationFit.Result fit) {
    StringBuilder b = new StringBuilder();
    b.append("{\"format\": \"").append(CalibrationFile.FORMAT).append("\", \"version\": ").append(CalibrationFile.VERSION).append(",\n");
    b.append(" \"device\": ").append(quote(samples.device())).append(", \"driver\": ").append(quote(samples.driver())).append(", \"cuda\": ")
        .append(quote(samples.cuda())).append(", \"date\": ").append(quote(samples.date())).append(",\n");
    if (!fit.forward().isEmpty()) {
      b.append(" \"forward\": ").append(object(fit.forward())).append(",\n");
    }
    if (!fit.copies().isEmpty()) {
      b.append(" \"copies\": ").append(object(fit.copies())).append(",\n");
    }
    if (!fit.latency().isEmpty()) {
      b.append(" \"latency\": {");
      String sep = "";
      for (Map.Entry<String, Map<String, Long>> e : fit.latency().entrySet()) {
        b.append(sep).append(quote(e.getKey())).append(": ").append(object(e.getValue()));
        sep = ",\n             ";
      }
      b.append("},\n");
    }
    b.append(" \"samples\": {\"granularity_bytes\": ").append(samples.granularityBytes()).append(", \"total_bytes\": ").append(samples.totalBytes());
    if (!samples.skipped().isEmpty()) {
      b.append(",\n   \"skipped\": ").append(object(samples.skipped()));
    }
    for (String kind : Samples.KINDS.keySet()) {
      var series = samples.of(kind);
      if (series.isEmpty()) {
        continue;
      }
      b.append(",\n   ").append(quote(kind)).append(": [");
      String sep = "";
      for (Samples.Series s : series) {
        b.append(sep).append('{');
        for (Map.Entry<String, Long> f : s.shape().entrySet()) {
          b.append(quote(f.getKey())).append(": ").append(f.getValue()).append(", ");
        }
        b.append("\"ns\": ").append(java.util.Arrays.toString(s.nanos())).append('}');
        sep = ",\n     ";
      }
      b.append(']');
    }
    b.append("}}\n");
    return b.toString();
  }

  private static String object(Map<String, ?> fields) {
    StringBuilder b = new StringBuilder("{");
    for (Iterator<? extends Map.Entry<String, ?>> it = fields.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, ?> e = it.next();
      b.append(quote(e.getKey())).append(": ").append(e.getValue() instanceof String s ? quote(s) : String.valueOf(e.getValue()));
      if (it.hasNext()) {
        b.append(", ");
      }
    }
    return b.append('}').toString();
  }

  private static String quote(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
