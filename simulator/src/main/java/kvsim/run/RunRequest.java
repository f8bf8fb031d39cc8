package kvsim.run;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.config.Origin;
import kvsim.config.WorkloadSpec;

/**
 * What a user asked to run on allocators (L1), before anything is resolved: the workload as
 * written, an optional workload spec file, and the command-line overrides as text. {@link
 * RunSpec#resolve} turns it into a {@link RunSpec}. Built from {@link #of} with one {@code with…}
 * call per value given, in place of a long positional constructor; every value not given is null,
 * empty, false or 0 (the user said nothing).
 */
public final class RunRequest {
  private String workload;
  private WorkloadSpec spec;
  private Path specDir;
  private List<String> allocators = List.of();
  private String device;
  private String model;
  private String weights;
  private String activations;
  private List<String> settings = List.of();
  private String torchAllocConf;
  private String calibration;
  private boolean check;
  private long sampleEvery;
  private Map<String, Origin> origins = Map.of();

  private RunRequest() {}

  private RunRequest copy() {
    RunRequest r = new RunRequest();
    r.workload = workload;
    r.spec = spec;
    r.specDir = specDir;
    r.allocators = allocators;
    r.device = device;
    r.model = model;
    r.weights = weights;
    r.activations = activations;
    r.settings = settings;
    r.torchAllocConf = torchAllocConf;
    r.calibration = calibration;
    r.check = check;
    r.sampleEvery = sampleEvery;
    r.origins = origins;
    return r;
  }

  /** Returns a copy of this request changed by {@code change}. */
  private RunRequest with(java.util.function.Consumer<RunRequest> change) {
    RunRequest r = copy();
    change.accept(r);
    return r;
  }

  /** Returns a request for {@code workload} (a trace path, a generator spec, or a spec file's name; null with a spec file) with nothing else given. */
  public static RunRequest of(String workload) {
    RunRequest r = new RunRequest();
    r.workload = workload;
    return r;
  }

  /** Returns this request with a workload spec file's content and the folder its paths are relative to. */
  public RunRequest withSpec(WorkloadSpec content, Path dir) {
    return with(r -> {
      r.spec = content;
      r.specDir = dir;
    });
  }

  /** Returns this request with these allocators ({@code -a}; empty: the spec's, else every registered one). */
  public RunRequest withAllocators(List<String> names) {
    return with(r -> r.allocators = List.copyOf(names));
  }

  /** Returns this request with a device preset or size ({@code --device}). */
  public RunRequest withDevice(String text) {
    return with(r -> r.device = text);
  }

  /** Returns this request with a model preset ({@code --model}). */
  public RunRequest withModel(String text) {
    return with(r -> r.model = text);
  }

  /** Returns this request with a memory plan: weights and activations region sizes ({@code --weights}, {@code --activations}), each null for none. */
  public RunRequest withPlan(String weightsText, String activationsText) {
    return with(r -> {
      r.weights = weightsText;
      r.activations = activationsText;
    });
  }

  /** Returns this request with allocator options {@code ALLOCATOR.KEY=VALUE} ({@code --set}). */
  public RunRequest withSettings(List<String> allocatorOptions) {
    return with(r -> r.settings = List.copyOf(allocatorOptions));
  }

  /** Returns this request with pytorch-caching's options in PYTORCH_CUDA_ALLOC_CONF syntax. */
  public RunRequest withTorchAllocConf(String conf) {
    return with(r -> r.torchAllocConf = conf);
  }

  /** Returns this request with a calibration file ({@code --calibration}). */
  public RunRequest withCalibration(String file) {
    return with(r -> r.calibration = file);
  }

  /** Returns this request running the invariant checkers after every event, or not. */
  public RunRequest withCheck(boolean on) {
    return with(r -> r.check = on);
  }

  /** Returns this request with a time-series stride in events (0: automatic). */
  public RunRequest withSampleEvery(long events) {
    return with(r -> r.sampleEvery = events);
  }

  /**
   * Returns this request with the value of {@code option} ({@code --device}, {@code --model},
   * {@code --weights}, {@code --activations}) given at {@code origin} (a suite's field, a grid's),
   * where {@link RunSpec#resolve} reports a problem with it.
   */
  public RunRequest withOrigin(String option, Origin origin) {
    RunRequest r = copy();
    Map<String, Origin> m = new LinkedHashMap<>(origins);
    m.put(option, origin);
    r.origins = Map.copyOf(m);
    return r;
  }

  /** Returns where the value of {@code option} was given: its {@link #withOrigin}, else the option itself. */
  public Origin origin(String option) {
    return origins.getOrDefault(option, Origin.option(option));
  }

  /** Returns the workload argument as written (trace path, generator spec, or the spec file's name). */
  public String workload() {
    return workload;
  }

  /** Returns the workload spec file's content, or null. */
  public WorkloadSpec spec() {
    return spec;
  }

  /** Returns the folder the spec file's paths are relative to, or null. */
  public Path specDir() {
    return specDir;
  }

  /** Returns the allocator names ({@code -a}); empty for the spec's, else every registered one. */
  public List<String> allocators() {
    return allocators;
  }

  /** Returns the device preset or size, or null. */
  public String device() {
    return device;
  }

  /** Returns the model preset, or null. */
  public String model() {
    return model;
  }

  /** Returns the weights region size, or null. */
  public String weights() {
    return weights;
  }

  /** Returns the activations region size, or null. */
  public String activations() {
    return activations;
  }

  /** Returns the allocator options as {@code ALLOCATOR.KEY=VALUE}. */
  public List<String> settings() {
    return settings;
  }

  /** Returns pytorch-caching's options in PYTORCH_CUDA_ALLOC_CONF syntax, or null. */
  public String torchAllocConf() {
    return torchAllocConf;
  }

  /** Returns the calibration file, or null. */
  public String calibration() {
    return calibration;
  }

  /** Returns whether the invariant checkers run after every event. */
  public boolean check() {
    return check;
  }

  /** Returns the time-series stride in events, 0 for automatic. */
  public long sampleEvery() {
    return sampleEvery;
  }

  /** Returns whether a {@code --set} gives this allocator option. */
  public boolean sets(String allocator, String key) {
    return settings.stream().anyMatch(s -> s.startsWith(allocator + "." + key + "="));
  }
}
