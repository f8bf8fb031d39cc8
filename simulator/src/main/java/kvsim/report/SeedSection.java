package kvsim.report;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.metrics.Interval;

/**
 * The report's section of a run over seeds ({@code serving --seeds}, {@code capacity --seeds}): the
 * headline metrics as median [low, high] with what the interval is (Note [The seed interval] on
 * {@code metrics.Interval}). {@link HtmlReport} calls it once per folder; a single run adds nothing.
 */
final class SeedSection {
  private SeedSection() {}

  private static final List<String[]> SERVING = List.of(
      new String[] {"tokens/s", "throughput_tokens_per_second"}, new String[] {"requests/s", "throughput_requests_per_second"},
      new String[] {"TTFT p50 (s)", "ttft_seconds.p50"}, new String[] {"TTFT p90 (s)", "ttft_seconds.p90"}, new String[] {"TPOT p50 (s)", "tpot_seconds.p50"},
      new String[] {"norm. latency (s/token)", "normalized_latency_seconds_per_token.mean"}, new String[] {"preemptions", "preemptions"},
      new String[] {"rejected", "requests_rejected"});

  private static final List<String[]> CAPACITY = List.of(
      new String[] {"max rate (req/s)", "max_rate_rps"}, new String[] {"goodput (req/s)", "goodput_rps"},
      new String[] {"not finished (share)", "rejected_fraction"});

  /** Appends the interval table of a serving folder run over seeds; nothing for a single run. */
  static void serving(StringBuilder out, ServingResults r) {
    List<String> header = new ArrayList<>(List.of("system"));
    SERVING.forEach(c -> header.add(c[0]));
    List<List<String>> rows = new ArrayList<>();
    Map<String, Map<String, Object>> any = null;
    for (ServingResults.Entry e : r.entries()) {
      Map<String, Map<String, Object>> in = SeedTable.intervals(e.optional().get("intervals"));
      if (in.isEmpty()) {
        return;
      }
      any = in;
      List<String> row = new ArrayList<>(List.of(e.label()));
      for (String[] c : SERVING) {
        row.add(SeedTable.cell(in.get(c[1]), v -> Diff.number(v)));
      }
      rows.add(row);
    }
    if (any != null) {
      section(out, header, rows, any, r.config().get("seeds"));
    }
  }

  /** Appends the interval table of a capacity folder searched over seeds (read from its summary.json); nothing for a single search. */
  static void capacity(StringBuilder out, Path dir) {
    Diff.Side side = Diff.read(dir);
    if (side.seeds().isEmpty()) {
      return;
    }
    List<String> header = new ArrayList<>(List.of("system"));
    CAPACITY.forEach(c -> header.add(c[0]));
    List<List<String>> rows = new ArrayList<>();
    Map<String, Map<String, Object>> any = null;
    for (Diff.Entry e : side.entries().values()) {
      List<String> row = new ArrayList<>(List.of(e.label()));
      for (String[] c : CAPACITY) {
        Interval i = e.intervals().get(c[1]);
        row.add(i == null ? "-" : Diff.withInterval(i.median(), i));
        if (i != null && any == null) {
          any = Map.of(c[1], i.toMap());
        }
      }
      rows.add(row);
    }
    section(out, header, rows, any, side.seeds());
  }

  private static void section(StringBuilder out, List<String> header, List<List<String>> rows, Map<String, Map<String, Object>> any, Object seeds) {
    out.append("<h3>Over seeds ").append(Html.escape(String.valueOf(seeds))).append("</h3>\n");
    Html.table(out, "Median [interval] over the seeds", header, rows);
    out.append("<p class=\"alt\">").append(Html.escape(SeedTable.legend(any))).append(". The other tables and the charts show the medians"
        + " (capacity: the median seed's search); the time series and latency distributions are the first seed's run.</p>\n");
  }
}
