package kvsim.run;

import java.nio.file.Path;
import java.util.List;
import kvsim.config.WorkloadSpec;

/**
 * What a user asked to run, before anything is resolved: the workload as written, an optional
 * workload spec file, and the command-line overrides as text. {@link RunSpec#resolve} turns it
 * into a {@link RunSpec}; every field may be null or empty where the user said nothing.
 *
 * @param workload the workload argument as written (trace path, generator spec, or the spec file's name)
 * @param spec the workload spec file's content, or null
 * @param specDir the folder the spec file's paths are relative to, or null
 * @param allocators allocator names ({@code -a}); empty for the spec's, else every registered one
 * @param device device preset or size ({@code --device})
 * @param model model preset ({@code --model})
 * @param weights weights region size ({@code --weights})
 * @param activations activations region size ({@code --activations})
 * @param settings allocator options as {@code ALLOCATOR.KEY=VALUE} ({@code --set})
 * @param torchAllocConf options of pytorch-caching in PYTORCH_CUDA_ALLOC_CONF syntax
 * @param calibration a calibration file ({@code --calibration}), or null
 * @param check run the invariant checkers after every event
 * @param sampleEvery time-series stride in events, 0 for automatic
 */
public record RunRequest(
    String workload,
    WorkloadSpec spec,
    Path specDir,
    List<String> allocators,
    String device,
    String model,
    String weights,
    String activations,
    List<String> settings,
    String torchAllocConf,
    String calibration,
    boolean check,
    long sampleEvery) {

  /** Returns whether a {@code --set} gives this allocator option. */
  public boolean sets(String allocator, String key) {
    return settings.stream().anyMatch(s -> s.startsWith(allocator + "." + key + "="));
  }
}
