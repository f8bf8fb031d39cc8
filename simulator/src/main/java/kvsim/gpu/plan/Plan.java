package kvsim.gpu.plan;

import java.io.IOException;
import java.io.Writer;
import java.util.List;

/**
 * A GPU replay plan: the exact device operations a replay performs, in order (README, "gpu
 * replay"), with what it was planned from. Written as {@code plan.jsonl}, one op a line after a
 * header line, so that a plan compares byte for byte with a golden one.
 *
 * @param mode {@code raw} or {@code arena}
 * @param allocator the model whose decisions an arena plan applies; null in raw mode
 * @param workload the workload as resolved
 * @param granularityBytes the page granularity the plan's physical memory and mappings use
 * @param events the trace events planned
 * @param ops the operations
 */
public record Plan(String mode, String allocator, String workload, long granularityBytes, long events, List<PlanOp> ops) {
  /** The {@code format} of the header line. */
  public static final String FORMAT = "kvsim-gpu-plan";

  public Plan {
    ops = List.copyOf(ops);
  }

  /** Returns the header line. */
  public String headerLine() {
    return "{\"format\":\"" + FORMAT + "\",\"version\":1,\"mode\":\"" + mode + "\""
        + (allocator == null ? "" : ",\"allocator\":\"" + allocator + "\"")
        + ",\"workload\":\"" + workload.replace("\\", "\\\\").replace("\"", "\\\"") + "\""
        + ",\"granularity_bytes\":" + granularityBytes + ",\"events\":" + events + ",\"ops\":" + ops.size() + "}";
  }

  /** Writes the header and one line per op. */
  public void write(Writer out) throws IOException {
    out.write(headerLine());
    out.write('\n');
    for (PlanOp op : ops) {
      out.write(op.toJsonLine());
      out.write('\n');
    }
  }

  /** Returns the whole {@code plan.jsonl} text. */
  public String toJsonLines() {
    java.io.StringWriter w = new java.io.StringWriter();
    try {
      write(w);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return w.toString();
  }
}
