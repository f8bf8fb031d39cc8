package kvsim.core;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A transformer model's shape, as far as memory and the roofline need it. KV bytes per token are
 * {@code 2 (K and V) × layers × kvHeads × headDim × dtypeBytes}; Llama-2-7B in fp16 is 2 × 32 × 32 ×
 * 128 × 2 B = 512 KiB per token. Shapes are from the models' published configs.
 *
 * @param name preset name
 * @param layers transformer layers
 * @param kvHeads key/value heads (fewer than query heads under grouped-query attention)
 * @param headDim dimension of one head
 * @param dtypeBytes bytes per KV element (2 for fp16/bf16)
 * @param hiddenSize model width
 * @param intermediateSize MLP width
 * @param parameters parameter count
 * @param maxModelLen the context length the model was trained for ({@code max_position_embeddings}), vLLM's default {@code max_model_len}
 */
public record ModelPreset(
    String name,
    int layers,
    int kvHeads,
    int headDim,
    int dtypeBytes,
    int hiddenSize,
    int intermediateSize,
    long parameters,
    int maxModelLen) {

  /** Name of the default model preset. */
  public static final String DEFAULT_NAME = "llama-2-7b";

  private static final Map<String, ModelPreset> PRESETS = new LinkedHashMap<>();

  static {
    add(new ModelPreset("opt-13b", 40, 40, 128, 2, 5120, 20480, 12_853_000_000L, 2048));
    add(new ModelPreset("llama-2-7b", 32, 32, 128, 2, 4096, 11008, 6_738_000_000L, 4096));
    add(new ModelPreset("llama-2-13b", 40, 40, 128, 2, 5120, 13824, 13_016_000_000L, 4096));
    add(new ModelPreset("llama-3-8b", 32, 8, 128, 2, 4096, 14336, 8_030_000_000L, 8192));
    add(new ModelPreset("llama-3-70b", 80, 8, 128, 2, 8192, 28672, 70_554_000_000L, 8192));
    add(new ModelPreset("mixtral-8x7b", 32, 8, 128, 2, 4096, 14336, 46_703_000_000L, 32768));
  }

  private static void add(ModelPreset p) {
    PRESETS.put(p.name(), p);
  }

  /** Returns the KV-cache bytes one token occupies. */
  public long kvBytesPerToken() {
    return 2L * layers * kvHeads * headDim * dtypeBytes;
  }

  /** Returns the bytes of the weights in the KV dtype. */
  public long weightBytes() {
    return parameters * dtypeBytes;
  }

  /** The default model: Llama-2-7B in fp16. */
  public static ModelPreset defaultModel() {
    return PRESETS.get(DEFAULT_NAME);
  }

  /** Returns the presets in a stable order. */
  public static Map<String, ModelPreset> presets() {
    return java.util.Collections.unmodifiableMap(PRESETS);
  }

  /** Returns the preset of this name (case-insensitive); throws IllegalArgumentException if none. */
  public static ModelPreset parse(String text) {
    ModelPreset p = PRESETS.get(text.trim().toLowerCase(Locale.ROOT));
    if (p == null) {
      throw new IllegalArgumentException("unknown model '" + text + "': use one of " + PRESETS.keySet());
    }
    return p;
  }
}
