package kvsim.regress;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import javax.xml.stream.XMLOutputFactory;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamWriter;
import kvsim.core.OutputFile;
import kvsim.report.TextTable;

/**
 * The gate's three reports: the terminal table of every watched metric, JUnit XML for CI systems
 * (Maven Surefire's {@code surefire-test-report} schema, which Jenkins, GitLab and the GitHub test
 * reporters read), and a Markdown summary for a pull-request comment.
 */
public final class Reports {
  /** The JUnit XML of {@code kvsim regress --junit}, recognised by its suite's name. */
  public static final OutputFile.Kind JUNIT_KIND =
      OutputFile.Kind.startingWith("a JUnit report", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvsim-regress.");

  /** The Markdown summary of {@code kvsim regress --markdown}, recognised by its heading. */
  public static final OutputFile.Kind MARKDOWN_KIND = OutputFile.Kind.startingWith("a Markdown summary", "### kvsim regress:");

  private Reports() {}

  /** Prints one row per watched metric (scenario, run, metric, baseline, now, delta, verdict), then the counts. */
  public static void table(PrintWriter out, Regression.Outcome o) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"scenario", "run", "metric", "baseline", "now", "delta", "verdict"});
    for (Comparison c : o.comparisons()) {
      rows.add(new String[] {c.scenario(), c.run(), c.metric(), c.baselineText(), c.nowText(), c.deltaText(), c.verdict().label()});
    }
    TextTable.print(out, rows, Set.of(0, 1, 2, 6));
    out.println();
    out.println(counts(o));
    for (Comparison c : o.with(Verdict.REGRESSED)) {
      out.println("regressed: " + c.describe());
    }
    out.flush();
  }

  /** Returns the counts line: {@code suite default: 2 regressed, 1 improved, ... (N metrics in M scenarios)}. */
  public static String counts(Regression.Outcome o) {
    StringBuilder sb = new StringBuilder("suite " + o.suite().name() + ": ");
    List<String> parts = new ArrayList<>();
    for (Verdict v : Verdict.values()) {
      long n = o.count(v);
      if (n > 0 || v == Verdict.REGRESSED) {
        parts.add(n + " " + v.label());
      }
    }
    sb.append(String.join(", ", parts));
    sb.append(" (").append(o.comparisons().size()).append(" watched metrics in ").append(o.scenarioCount()).append(" scenarios)");
    return sb.toString();
  }

  /**
   * Writes JUnit XML: one {@code testsuite} named {@code kvsim-regress.<suite>}, one {@code
   * testcase} per scenario × run × metric (class name {@code <suite>.<scenario>}, name {@code
   * <run>: <metric>}, time the wall time of that run; the suite's time is the sum over runs), a {@code failure} of type {@code
   * regression} naming the metric, baseline, now and delta for each regression.
   */
  public static void junit(OutputFile file, Regression.Outcome o) throws IOException {
    long wallNanos = o.comparisons().stream().filter(distinctRuns()).mapToLong(Comparison::wallNanos).sum();
    file.write(out -> {
      try {
        XMLStreamWriter x = XMLOutputFactory.newFactory().createXMLStreamWriter(out, "UTF-8");
        x.writeStartDocument("UTF-8", "1.0");
        x.writeCharacters("\n");
        x.writeStartElement("testsuite");
        x.writeAttribute("name", "kvsim-regress." + o.suite().name());
        x.writeAttribute("time", seconds(wallNanos));
        x.writeAttribute("tests", Integer.toString(o.comparisons().size()));
        x.writeAttribute("errors", "0");
        x.writeAttribute("skipped", "0");
        x.writeAttribute("failures", Long.toString(o.count(Verdict.REGRESSED)));
        x.writeCharacters("\n");
        if (!o.settings().isEmpty()) {
          x.writeCharacters("  ");
          x.writeStartElement("properties");
          for (String setting : o.settings()) {
            x.writeEmptyElement("property");
            x.writeAttribute("name", "set");
            x.writeAttribute("value", setting);
          }
          x.writeEndElement();
          x.writeCharacters("\n");
        }
        for (Comparison c : o.comparisons()) {
          x.writeCharacters("  ");
          x.writeStartElement("testcase");
          x.writeAttribute("name", c.run() + ": " + c.metric());
          x.writeAttribute("classname", o.suite().name() + "." + c.scenario());
          x.writeAttribute("time", seconds(c.wallNanos()));
          if (c.verdict() == Verdict.REGRESSED) {
            x.writeCharacters("\n    ");
            x.writeStartElement("failure");
            x.writeAttribute("type", "regression");
            x.writeAttribute("message", c.metric() + " regressed: " + c.baselineText() + " -> " + c.nowText() + " (delta " + c.deltaText() + ")");
            x.writeCharacters(c.describe());
            x.writeEndElement();
            x.writeCharacters("\n  ");
          } else {
            x.writeCharacters("\n    ");
            x.writeStartElement("system-out");
            x.writeCharacters(c.verdict().label() + ": " + c.baselineText() + " -> " + c.nowText() + " (delta " + c.deltaText() + ")");
            x.writeEndElement();
            x.writeCharacters("\n  ");
          }
          x.writeEndElement();
          x.writeCharacters("\n");
        }
        x.writeEndElement();
        x.writeCharacters("\n");
        x.writeEndDocument();
        x.flush();
        x.close();
      } catch (XMLStreamException e) {
        throw new IOException("cannot write " + file + ": " + e.getMessage(), e);
      }
    });
  }

  /** Keeps the first comparison of each (scenario, run), to sum each run's wall time once. */
  private static java.util.function.Predicate<Comparison> distinctRuns() {
    Set<String> seen = new java.util.HashSet<>();
    return c -> seen.add(c.scenario() + "/" + c.run());
  }

  /** Seconds with three decimals, as Surefire's SUREFIRE_TIME type writes them. */
  private static String seconds(long nanos) {
    return String.format(Locale.ROOT, "%.3f", nanos / 1e9);
  }

  /** Writes the Markdown summary ({@link #markdown(Regression.Outcome)}). */
  public static void markdown(OutputFile file, Regression.Outcome o) throws IOException {
    byte[] text = markdown(o).getBytes(StandardCharsets.UTF_8);
    file.write(out -> out.write(text));
  }

  /**
   * Returns a summary fit for a pull-request comment: the counts, then tables of the regressions,
   * the improvements and the moves within tolerance, each row with baseline, now and delta; the
   * unchanged metrics are only counted.
   */
  public static String markdown(Regression.Outcome o) {
    StringWriter s = new StringWriter();
    PrintWriter w = new PrintWriter(s);
    long regressed = o.count(Verdict.REGRESSED);
    w.println("### kvsim regress: " + o.suite().name() + (o.written() != null ? " (baselines recorded)" : regressed > 0 ? " — regressions" : " — no regressions"));
    w.println();
    if (!o.settings().isEmpty()) {
      w.println("Policy change: " + String.join(", ", o.settings().stream().map(x -> "`" + x + "`").toList()) + ".");
      w.println();
    }
    w.println(counts(o).replaceFirst("^suite [^:]*: ", "") + ".");
    section(w, "Regressed", o.with(Verdict.REGRESSED));
    section(w, "Improved", o.with(Verdict.IMPROVED));
    section(w, "Within tolerance", o.with(Verdict.WITHIN_TOLERANCE));
    section(w, "New (no baseline before)", o.with(Verdict.NEW));
    w.flush();
    return s.toString();
  }

  private static void section(PrintWriter w, String title, List<Comparison> rows) {
    if (rows.isEmpty()) {
      return;
    }
    w.println();
    w.println("#### " + title + " (" + rows.size() + ")");
    w.println();
    w.println("| scenario | run | metric | baseline | now | delta | better | tolerance |");
    w.println("|---|---|---|---:|---:|---:|---|---|");
    for (Comparison c : rows) {
      w.println("| " + String.join(" | ", c.scenario(), c.run(), "`" + c.metric() + "`", c.baselineText(), c.nowText(), c.deltaText(),
          c.watch().better().name().toLowerCase(Locale.ROOT), c.watch().tolerance().toString()) + " |");
    }
  }
}
