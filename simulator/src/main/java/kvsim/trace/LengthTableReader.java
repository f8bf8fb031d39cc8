package kvsim.trace;

import java.io.IOException;
import java.nio.file.Path;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;
import org.apache.commons.rng.simple.RandomSource;

/**
 * Imports a table of request lengths without times (for example the ShareGPT length statistics
 * {@code sharegpt_8k_filtered_stats_llama2_tokenizer.csv}): a CSV whose columns {@code
 * num_prefill_tokens} (the prompt) and {@code num_decode_tokens} (the output) are read by name, the
 * others ignored. One request per row, in file order, no cycling.
 *
 * <p>Arrivals are Poisson at {@code rate} requests/s (required), as in the {@code requests}
 * generator: exponential gaps from time 0 (the first request arrives after one gap), Commons RNG's
 * XO_RO_SHI_RO_128_PP seeded with {@code seed}, one draw per row. {@code from}, {@code to} and
 * {@code speedup} then apply to these times as to a recorded trace's.
 */
public final class LengthTableReader extends ImportedRequestSource {
  /** The default seed. */
  public static final long DEFAULT_SEED = 1;

  private final CsvRows csv;
  private final int promptColumn;
  private final int outputColumn;
  private final double ratePerSecond;
  private final ZigguratSampler.Exponential exponential;
  private double arrivalSeconds;

  /** Opens {@code file}; options {@code rate} (required) and {@code seed} besides the shared ones. */
  public LengthTableReader(Path file, OptionMap options) throws IOException {
    super("lengths", file, options, "rate", "num_prefill_tokens", "num_decode_tokens");
    if (options.optional("rate") == null) {
      throw options.bad("rate", "", "required: the Poisson arrival rate in requests/s (the table has no times)");
    }
    this.ratePerSecond = options.number("rate", 1, 1e-9, 1e9);
    long seed = options.integer("seed", DEFAULT_SEED, Long.MIN_VALUE, Long.MAX_VALUE);
    options.requireAllUsed();
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    this.exponential = ZigguratSampler.Exponential.of(rng);
    this.csv = new CsvRows(file, "length table");
    try {
      this.promptColumn = csv.column("num_prefill_tokens");
      this.outputColumn = csv.column("num_decode_tokens");
    } catch (InputException e) {
      csv.close();
      throw e;
    }
  }

  @Override
  protected boolean relativeToFirstRow() {
    return false;
  }

  @Override
  protected Row readRow() throws IOException {
    if (!csv.next()) {
      return null;
    }
    long line = csv.line();
    long prompt = csvInteger(csv.field(promptColumn), line, "num_prefill_tokens");
    long output = csvInteger(csv.field(outputColumn), line, "num_decode_tokens");
    arrivalSeconds += exponential.sample() / ratePerSecond;
    long t = Math.round(arrivalSeconds * 1e9);
    if (t == Long.MAX_VALUE) {
      throw InputException.at(source, line, "rate", "arrival times pass 2^63 ns (292 years); raise rate");
    }
    return new Row(line, t, prompt, output, null);
  }

  @Override
  public int hashBlockTokens() {
    return 0;
  }

  @Override
  public void close() throws IOException {
    csv.close();
  }
}
