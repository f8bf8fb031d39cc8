package kvsim.tune;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.core.InputException;

/**
 * The settings {@code kvsim tune} searches for one allocator: its options, each an {@link Axis}
 * with the model's default, the values of the first grid and a finer ordered ladder for the
 * refinement (Note [Grid, then refinement] on {@link AllocatorTuner}).
 *
 * <p>For {@code pytorch-caching} the axes are the four {@code PYTORCH_CUDA_ALLOC_CONF} keys that
 * change placement and can fix a fragmentation OOM (README, "PyTorch's caching allocator"), and a
 * cell's setting is one {@code torch-alloc-conf} string of its non-default keys, in PyTorch's
 * syntax, so the recommendation can be pasted. For the other allocators the axes are the options
 * their registry entries declare ({@code kvsim list}), written as {@code --set ALLOCATOR.KEY=V}; a
 * default here is the model's own {@code DEFAULT_*} value as {@code kvsim list} quotes it (this
 * package may not name the models' classes), so a cell at the defaults is the allocator's default
 * run.
 *
 * <p>Note [Values of the caching allocator's search]: {@code max_split_size_mb} is at least 20 in
 * current PyTorch (cfg2; TorchAllocConf's parser); unset means unlimited, so it sits at the top of
 * the ladder. {@code roundup_power2_divisions} is one power of two for every interval. {@code
 * garbage_collection_threshold} acts only under a per-process memory fraction (PyTorch's {@code
 * garbage_collect_cached_blocks} runs only then; so does the model), so the default grid leaves
 * it unset and the refinement still tries its neighbours; {@code --grid full} crosses it too.
 */
public final class TuneSpace {
  /** The caching allocator's registry name. */
  public static final String CACHING = "pytorch-caching";
  /** The caching allocator's option that carries a whole conf string. */
  public static final String CONF_OPTION = "torch-alloc-conf";
  /** How an unset caching key is written in a cell's settings. */
  public static final String UNSET = "unset";

  /**
   * One option searched.
   *
   * @param name the option's key ({@code max_split_size_mb}, {@code block-size})
   * @param defaultValue the model's default, as written on the ladder
   * @param grid the values of the first grid, in order
   * @param ladder every value the refinement may step through, in increasing order of the setting
   */
  public record Axis(String name, String defaultValue, List<String> grid, List<String> ladder) {
    public Axis {
      grid = List.copyOf(grid);
      ladder = List.copyOf(ladder);
    }
  }

  private final String allocator;
  private final List<Axis> axes;

  private TuneSpace(String allocator, List<Axis> axes) {
    this.allocator = allocator;
    this.axes = List.copyOf(axes);
  }

  /** Returns the allocator searched. */
  public String allocator() {
    return allocator;
  }

  /** Returns the axes, in the order cells list them. */
  public List<Axis> axes() {
    return axes;
  }

  /** Returns whether settings are one {@code PYTORCH_CUDA_ALLOC_CONF} string. */
  public boolean torchConf() {
    return allocator.equals(CACHING);
  }

  /** Returns the allocators that have a declared search space, in registry order. */
  public static List<String> allocators() {
    return List.of("first-fit", "best-fit", "buddy", "slab", "multi-slab", "paged", CACHING, "vattention", "stitching");
  }

  /**
   * Returns the search space of {@code allocator}; {@code full} crosses every axis's grid (the
   * caching allocator's garbage-collection threshold too). An allocator without one is an
   * InputException naming those that have.
   */
  public static TuneSpace of(String allocator, boolean full) {
    List<Axis> axes = switch (allocator) {
      case CACHING -> List.of(
          new Axis("expandable_segments", "False", List.of("False", "True"), List.of("False", "True")),
          new Axis("max_split_size_mb", UNSET, List.of(UNSET, "20", "64", "128", "256", "512", "1024"),
              List.of("20", "32", "48", "64", "96", "128", "192", "256", "384", "512", "768", "1024", "1536", "2048", UNSET)),
          new Axis("roundup_power2_divisions", UNSET, List.of(UNSET, "1", "2", "4", "8", "16"), List.of(UNSET, "1", "2", "4", "8", "16", "32")),
          new Axis("garbage_collection_threshold", UNSET, full ? List.of(UNSET, "0.6", "0.8") : List.of(UNSET),
              List.of(UNSET, "0.5", "0.6", "0.7", "0.8", "0.9", "0.95")));
      case "first-fit", "best-fit" -> List.of(sizes("alignment", "512", List.of("256", "512", "4KiB", "64KiB", "2MiB")));
      case "buddy" -> List.of(sizes("min-block", "2MiB", List.of("256KiB", "512KiB", "1MiB", "2MiB", "4MiB", "8MiB")));
      case "slab" -> List.of(sizes("block-size", "2MiB", List.of("512KiB", "1MiB", "2MiB", "4MiB", "8MiB", "16MiB", "32MiB")));
      case "multi-slab" -> List.of(
          new Axis("classes", "2MiB:70,32MiB:15,256KiB:10,256MiB:5",
              List.of("2MiB:70,32MiB:15,256KiB:10,256MiB:5", "2MiB:50,32MiB:30,256KiB:10,256MiB:10", "2MiB:40,8MiB:30,32MiB:20,256MiB:10",
                  "1MiB:30,4MiB:30,16MiB:20,64MiB:10,256MiB:10"),
              List.of("2MiB:70,32MiB:15,256KiB:10,256MiB:5", "2MiB:50,32MiB:30,256KiB:10,256MiB:10", "2MiB:40,8MiB:30,32MiB:20,256MiB:10",
                  "1MiB:30,4MiB:30,16MiB:20,64MiB:10,256MiB:10")),
          new Axis("split", "false", List.of("false", "true"), List.of("false", "true")));
      case "paged" -> List.of(sizes("block-tokens", "16", List.of("8", "16", "32", "64", "128")));
      case "vattention" -> List.of(sizes("page-size", "2MiB", List.of("64KiB", "256KiB", "1MiB", "2MiB")));
      case "stitching" -> List.of(sizes("max-stitched", "64", List.of("8", "16", "32", "64", "128", "256")));
      default -> throw new InputException("--allocator " + allocator + ": no search space for it (known: " + String.join(", ", allocators()) + ")");
    };
    return new TuneSpace(allocator, axes);
  }

  private static Axis sizes(String name, String defaultValue, List<String> ladder) {
    return new Axis(name, defaultValue, ladder, ladder);
  }

  /**
   * Returns this space with the values of the axis {@code key} replaced by {@code values} (as
   * given, in order), for both the grid and the ladder: {@code --values KEY=V1,V2}. An unknown key
   * is an InputException naming the known ones; the values are checked by the caller.
   */
  public TuneSpace withValues(String key, List<String> values) {
    List<Axis> out = new ArrayList<>();
    boolean found = false;
    for (Axis a : axes) {
      if (a.name().equals(key)) {
        found = true;
        List<String> v = new ArrayList<>();
        for (String s : values) {
          if (v.contains(s)) {
            throw new InputException("--values " + key + ": '" + s + "' given twice");
          }
          v.add(s);
        }
        out.add(new Axis(key, a.defaultValue(), v, v));
      } else {
        out.add(a);
      }
    }
    if (!found) {
      throw new InputException("--values: unknown key '" + key + "' for " + allocator + " (known: "
          + String.join(", ", axes.stream().map(Axis::name).toList()) + ")");
    }
    return new TuneSpace(allocator, out);
  }

  /** Returns the default setting: every axis at its default. */
  public Map<String, String> defaults() {
    Map<String, String> m = new LinkedHashMap<>();
    axes.forEach(a -> m.put(a.name(), a.defaultValue()));
    return m;
  }

  /**
   * Returns the allocator options of a setting as a sweep cell's {@code set} entries: the caching
   * allocator's one conf string, or one {@code ALLOCATOR.KEY} per axis.
   */
  public Map<String, String> cellOptions(Map<String, String> setting) {
    Map<String, String> m = new LinkedHashMap<>();
    if (torchConf()) {
      m.put(allocator + "." + CONF_OPTION, conf(setting));
    } else {
      setting.forEach((k, v) -> m.put(allocator + "." + k, v));
    }
    return m;
  }

  /**
   * Returns the caching allocator's conf string of a setting: its keys that are not at their
   * defaults, in axis order, in PyTorch's syntax ({@code expandable_segments:True,max_split_size_mb:128});
   * "" for the defaults.
   */
  public String conf(Map<String, String> setting) {
    StringBuilder sb = new StringBuilder();
    for (Axis a : axes) {
      String v = setting.get(a.name());
      if (!v.equals(a.defaultValue()) && !v.equals(UNSET)) {
        sb.append(sb.length() == 0 ? "" : ",").append(a.name()).append(':').append(v);
      }
    }
    return sb.toString();
  }

  /** Returns how many axes of a setting are away from their defaults. */
  public int changed(Map<String, String> setting) {
    int n = 0;
    for (Axis a : axes) {
      n += setting.get(a.name()).equals(a.defaultValue()) ? 0 : 1;
    }
    return n;
  }

  /**
   * Returns a setting as the user writes it: the conf string ({@code expandable_segments:True}) or
   * the {@code --set} options of the non-default values; {@code (defaults)} for none.
   */
  public String label(Map<String, String> setting) {
    if (torchConf()) {
      String c = conf(setting);
      return c.isEmpty() ? "(defaults)" : c;
    }
    StringBuilder sb = new StringBuilder();
    for (Axis a : axes) {
      String v = setting.get(a.name());
      if (!v.equals(a.defaultValue())) {
        sb.append(sb.length() == 0 ? "" : " ").append("--set ").append(allocator).append('.').append(a.name()).append('=').append(v);
      }
    }
    return sb.length() == 0 ? "(defaults)" : sb.toString();
  }

  /**
   * Returns the line to paste for a setting: {@code PYTORCH_CUDA_ALLOC_CONF=…} for the caching
   * allocator (nothing to set for the defaults), else the {@code --set} options.
   */
  public String recommendation(Map<String, String> setting) {
    if (changed(setting) == 0) {
      return torchConf() ? "leave PYTORCH_CUDA_ALLOC_CONF unset (the defaults are best here)" : "keep " + allocator + "'s defaults (they are best here)";
    }
    return torchConf() ? "PYTORCH_CUDA_ALLOC_CONF=" + conf(setting) : label(setting);
  }

  /**
   * Checks one caching-allocator value by parsing the conf string that sets it alone; a bad value
   * is an InputException naming the option as PyTorch's parser does.
   */
  public void checkTorchValue(String key, String value) {
    if (value.equals(UNSET)) {
      return;
    }
    String text = key + ":" + value;
    try {
      TorchAllocConf.parse(text);
    } catch (IllegalArgumentException e) {
      throw new InputException("--values " + key + "=" + value + ": " + e.getMessage());
    }
  }
}
