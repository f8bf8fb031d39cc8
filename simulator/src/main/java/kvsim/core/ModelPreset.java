package kvsim.core;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A transformer model's shape, as far as memory and the roofline need it. KV bytes per token are
 * {@code 2 (K and V) × layers × kvHeads × headDim × dtypeBytes}; Llama-2-7B in fp16 is 2 × 32 × 32 ×
 * 128 × 2 B = 512 KiB per token. Shapes are from the models' published configs.
 *
 * <p>Note [OPT-66B and OPT-175B]: the shapes of the OPT paper (Zhang et al., "OPT: Open
 * Pre-trained Transformer Language Models", arXiv 2205.01068, Table 1: 66B has 64 layers, 72
 * heads, width 9,216; 175B has 96 layers, 96 heads, width 12,288; both a head dimension of 128 and
 * an MLP four times the width) and the Hugging Face config of {@code facebook/opt-66b} (ffn_dim
 * 36,864, vocab_size 50,272, max_position_embeddings 2,048). The parameter counts are counted from
 * that shape as OPT-13B's 12,853,473,280 are (the four attention projections and the two MLP
 * matrices with their biases, two layer norms per layer and a final one, the token embedding tied
 * to the LM head, and 2,050 learned positions): 65,719,701,504 and 174,604,468,224. OPT has
 * multi-head attention, so its KV heads are its heads.
 *
 * <p>Note [A model split over GPUs]: under tensor parallelism of degree N (Megatron-LM's split, as
 * vLLM runs it) every GPU holds 1/N of each linear layer's weights and 1/N of the attention heads;
 * {@link #perGpu} is the share of one GPU: 1/N of the parameters (kvsim splits every parameter,
 * the embedding and the LM head included, which vLLM also shards by vocabulary), 1/N of the MLP
 * width and kvHeads/N KV heads. Where the KV heads are fewer than N, vLLM replicates them: each GPU
 * holds one (its {@code get_num_kv_heads}, max(1, kv_heads / N), which requires N to be a multiple
 * of the KV heads); kvsim models that. N must divide the query heads ({@link
 * #tensorParallelRefusal}).
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
    // Note [OPT-66B and OPT-175B].
    add(new ModelPreset("opt-66b", 64, 72, 128, 2, 9216, 36864, 65_719_701_504L, 2048));
    add(new ModelPreset("opt-175b", 96, 96, 128, 2, 12288, 49152, 174_604_468_224L, 2048));
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

  /** Returns the query heads: the width over the head dimension. */
  public int heads() {
    return hiddenSize / headDim;
  }

  /**
   * Returns why this model cannot be split over {@code gpus} GPUs by tensor parallelism, or null
   * where it can (Note [A model split over GPUs]): the GPU count must divide the query heads, and
   * divide the KV heads or be a multiple of them (vLLM then replicates each KV head).
   */
  public String tensorParallelRefusal(int gpus) {
    if (gpus < 1) {
      return "tensor-parallel degree must be at least 1, got " + gpus;
    }
    if (heads() % gpus != 0) {
      return name + " has " + heads() + " attention heads, which " + gpus + " GPUs cannot split evenly (the degree must divide them)";
    }
    if (kvHeads % gpus != 0 && gpus % kvHeads != 0) {
      return name + " has " + kvHeads + " KV heads, which " + gpus + " GPUs can neither split evenly nor replicate (the degree must divide them or be a multiple of them)";
    }
    return null;
  }

  /**
   * Returns the share of one GPU of this model split over {@code gpus} GPUs (Note [A model split
   * over GPUs]): the same name, layers, head dimension, width and context length; kvHeads / gpus KV
   * heads (at least one, replicated), parameters / gpus and MLP width / gpus. Itself for one GPU.
   */
  public ModelPreset perGpu(int gpus) {
    String refusal = tensorParallelRefusal(gpus);
    if (refusal != null) {
      throw new IllegalArgumentException(refusal);
    }
    if (gpus == 1) {
      return this;
    }
    return new ModelPreset(name, layers, Math.max(1, kvHeads / gpus), headDim, dtypeBytes, hiddenSize, intermediateSize / gpus, parameters / gpus, maxModelLen);
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
