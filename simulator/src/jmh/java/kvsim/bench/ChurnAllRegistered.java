package kvsim.bench;

import kvsim.registry.AllocatorRegistry;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs {@link ChurnBenchmark} for every model in the registry, so models added later are measured
 * without editing the benchmark: {@code java -cp benchmarks.jar kvsim.bench.ChurnAllRegistered}
 * followed by any JMH options ({@code -f 1 -wi 3 -i 5 -w 1s -r 1s}).
 */
public final class ChurnAllRegistered {
  private ChurnAllRegistered() {}

  /** Runs the churn benchmark over every registered allocator. */
  public static void main(String[] args) throws RunnerException, CommandLineOptionException {
    new Runner(
            new OptionsBuilder()
                .parent(new CommandLineOptions(args))
                .include(ChurnBenchmark.class.getName() + ".churn")
                .param("allocator", AllocatorRegistry.names().toArray(String[]::new))
                .build())
        .run();
  }
}
