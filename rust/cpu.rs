//! What the CPU offers, where a caller picks its kernels by it.

/// Whether ONNX Runtime multiplies uint8 activations by int8 weights exactly on
/// this CPU: on x86 only with VNNI (AVX512-VNNI or AVX-VNNI, `vpdpbusd`), whose
/// products go straight into 32-bit sums. x86 CPUs without it pair the products
/// with `vpmaddubsw` into 16-bit sums, which saturate (all-MiniLM-L6-v2 in int8
/// fell to cosine 0.886 of the reference on an AVX2 CPU); other architectures
/// widen before adding.
pub fn int8_weights_exact() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("avx512vnni") || std::arch::is_x86_feature_detected!("avxvnni")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        true
    }
}
