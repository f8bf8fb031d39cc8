package kvsim.devicemodel;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The GPUs of one node that serve a model together by tensor parallelism (README, "Several GPUs"):
 * {@code gpus} devices of one preset. The multi-GPU presets are {@code 2x}, {@code 4x} and {@code
 * 8x} of every single preset ({@code 4xa100-40}, {@code 8xa100-80}, {@code 8xh100-80}); a preset
 * {@code Nx<device>} implies tensor-parallel degree N. Every GPU holds the same share of the model
 * and the same block table, so the serving layer sees one GPU's device ({@link #gpu}): memory,
 * bandwidth and compute per GPU. One node only: pipeline parallelism and several nodes are not
 * modelled.
 *
 * @param name the name given ({@code 4xa100-40}), or the single device's name
 * @param gpu one GPU of the group
 * @param gpus how many GPUs, 1 for a single device
 */
public record DeviceGroup(String name, DeviceSpec gpu, int gpus) {
  /** The GPU counts of the multi-GPU presets. */
  public static final List<Integer> PRESET_GPUS = List.of(2, 4, 8);
  /** The most GPUs of one node (a DGX node has 8). */
  public static final int MAX_GPUS = 8;

  private static final Pattern MULTI = Pattern.compile("([0-9]+)x(.+)");

  public DeviceGroup {
    if (gpus < 1 || gpus > MAX_GPUS) {
      throw new IllegalArgumentException("a node has 1 to " + MAX_GPUS + " GPUs, got " + gpus);
    }
  }

  /**
   * Parses {@code --device}: a multi-GPU preset ({@code 4xa100-40}), or anything {@link
   * DeviceSpec#parse} takes as one GPU; throws IllegalArgumentException naming the presets otherwise.
   */
  public static DeviceGroup parse(String text) {
    String key = text.trim().toLowerCase(Locale.ROOT);
    Matcher m = MULTI.matcher(key);
    if (m.matches() && DeviceSpec.presets().containsKey(m.group(2))) {
      int n = Integer.parseInt(m.group(1).length() > 2 ? "0" : m.group(1));
      if (!PRESET_GPUS.contains(n)) {
        throw new IllegalArgumentException("unknown device '" + text + "': the multi-GPU presets are 2x, 4x and 8x of a device preset (" + m.group(2)
            + "); for another count give --tensor-parallel with " + m.group(2));
      }
      return new DeviceGroup(key, DeviceSpec.presets().get(m.group(2)), n);
    }
    try {
      DeviceSpec d = DeviceSpec.parse(text);
      return new DeviceGroup(d.name(), d, 1);
    } catch (IllegalArgumentException e) {
      if (e.getMessage().startsWith("unknown device")) {
        throw new IllegalArgumentException(e.getMessage() + " or a multi-GPU preset such as " + String.join(", ", List.of("2xh100-80", "4xa100-40", "8xa100-80")));
      }
      throw e;
    }
  }

  /** Returns the multi-GPU presets in a stable order: 2x, 4x and 8x of each single preset. */
  public static Map<String, DeviceGroup> presets() {
    Map<String, DeviceGroup> m = new LinkedHashMap<>();
    for (int n : PRESET_GPUS) {
      for (DeviceSpec d : DeviceSpec.presets().values()) {
        m.put(n + "x" + d.name(), new DeviceGroup(n + "x" + d.name(), d, n));
      }
    }
    return Collections.unmodifiableMap(m);
  }

  /** Returns whether this is a multi-GPU preset (its name implies the GPU count). */
  public boolean multi() {
    return gpus > 1;
  }
}
