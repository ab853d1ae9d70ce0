//! Where GPU time goes: kernels sorted into categories by name, and the
//! measurements of a profile — time and calls per category, per decode step
//! when the steps are known, and the share of a step spent in collectives.

use super::report::Report;

/// The categories, in the order charts list them.
pub const CATEGORIES: [&str; 5] = ["collective", "gemm", "attention", "elementwise", "other"];

/// A kernel's category by its (demangled) name: NCCL's kernels and vLLM's custom
/// allreduce (`cross_device_reduce_*`) are collectives; cuBLAS/CUTLASS GEMMs and
/// GEMVs, attention (flash, paged, MLA, FlashInfer) and element-wise kernels
/// (norms, activations, copies, rotary) have their own; the rest is other.
pub fn category(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&[
        "nccl",
        "allreduce",
        "all_reduce",
        "allgather",
        "all_gather",
        "reducescatter",
        "reduce_scatter",
        "cross_device_reduce",
        "custom_all_reduce",
        "one_shot",
        "two_shot",
        "multimem",
        "alltoall",
        "all_to_all",
        "broadcast_kernel",
    ]) {
        "collective"
    } else if has(&["flash", "attention", "attn", "fmha", "mla", "flashinfer", "paged_", "xformers", "softmax"]) {
        "attention"
    } else if has(&[
        "gemm", "gemv", "cutlass", "cublas", "nvjet", "matmul", "xmma", "splitk", "wgrad", "dgrad", "sgemm", "hgemm",
        "marlin",
    ]) {
        "gemm"
    } else if has(&[
        "elementwise",
        "norm",
        "silu",
        "gelu",
        "act_and_mul",
        "rotary",
        "rope",
        "copy",
        "fill",
        "cat_",
        "index",
        "reduce_kernel",
        "argmax",
        "topk",
        "sampl",
        "embedding",
        "nchwtonhwc",
        "nhwctonchw",
        "bn_",
    ]) {
        "elementwise"
    } else {
        "other"
    }
}

/// Kernels a profile names by their own measurements (the most time first):
/// enough for "which kernels changed", few enough for a run's table.
pub const KERNELS_KEPT: usize = 20;

/// GPU time by category, and by kernel.
#[derive(Clone, Debug, Default)]
pub struct Breakdown {
    /// Per category (as `CATEGORIES`): (total ns, calls).
    pub totals: [(f64, u64); 5],
    /// Per kernel by its short name ([`short_name`]): (total ns, calls).
    pub kernels: std::collections::HashMap<String, (f64, u64)>,
    /// Decode steps seen, and the mean wall time of one (ns), when the profile
    /// has them (`ProfilerStep#N`, an NVTX range per step).
    pub steps: Option<u64>,
    pub step_ns: Option<f64>,
    /// What the steps were found by, for the notes.
    pub steps_from: Option<String>,
}

impl Breakdown {
    pub fn add(&mut self, name: &str, ns: f64, calls: u64) {
        let at = CATEGORIES.iter().position(|c| *c == category(name)).unwrap_or(4);
        self.add_in(at, name, ns, calls);
    }

    /// [`Breakdown::add`] for a kernel whose category (index in `CATEGORIES`) is known.
    pub fn add_in(&mut self, at: usize, name: &str, ns: f64, calls: u64) {
        self.totals[at.min(4)].0 += ns;
        self.totals[at.min(4)].1 += calls;
        let kernel = match self.kernels.get_mut(name) {
            Some(kernel) => kernel,
            None => self.kernels.entry(name.to_string()).or_default(),
        };
        kernel.0 += ns;
        kernel.1 += calls;
    }

    /// Collective calls counted from PyTorch's `nccl:*` annotations where
    /// they outnumber the collective kernels (NCCL with one rank returns
    /// without launching one): the calls the program made.
    pub fn calls_from_annotations(&mut self, annotated: u64, report: &mut Report) {
        if annotated > self.totals[0].1 {
            report.notes.push(format!(
                "{annotated} collective calls counted from their nccl:* annotations ({} collective kernels ran)",
                self.totals[0].1
            ));
            self.totals[0].1 = annotated;
        }
    }

    /// Its measurements into `report`.
    pub fn measure(&self, report: &mut Report) {
        let total: f64 = self.totals.iter().map(|(ns, _)| ns).sum();
        if total <= 0.0 {
            return;
        }
        report.add("gpu_time_ms", total / 1e6, "ms", None);
        for (name, (ns, calls)) in CATEGORIES.iter().zip(self.totals) {
            let key = format!("category={name}");
            report.add("gpu_time_ms", ns / 1e6, "ms", Some(&key));
            report.add("gpu_time_share_pct", ns / total * 100.0, "%", Some(&key));
            report.add("kernel_calls", calls as f64, "calls", Some(&key));
        }
        let (collective_ns, collective_calls) = self.totals[0];
        let mut kernels: Vec<(String, (f64, u64))> = Vec::new();
        for (name, (ns, calls)) in &self.kernels {
            // Kernels that differ only past their short name are one.
            let short = short_name(name);
            match kernels.iter_mut().find(|(n, _)| *n == short) {
                Some((_, k)) => *k = (k.0 + ns, k.1 + calls),
                None => kernels.push((short, (*ns, *calls))),
            }
        }
        kernels.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
        kernels.truncate(KERNELS_KEPT);
        let Some(steps) = self.steps.filter(|s| *s > 0) else {
            for (name, (ns, calls)) in &kernels {
                let key = format!("kernel={name}");
                report.add("kernel_ms", ns / 1e6, "ms", Some(&key));
                report.add("kernel_calls", *calls as f64, "calls", Some(&key));
            }
            return;
        };
        let per_step = |x: f64| x / steps as f64;
        for (name, (ns, calls)) in CATEGORIES.iter().zip(self.totals) {
            let key = format!("category={name}");
            report.add("gpu_ms_per_step", per_step(ns) / 1e6, "ms", Some(&key));
            report.add("kernel_calls_per_step", per_step(calls as f64), "calls", Some(&key));
        }
        for (name, (ns, calls)) in &kernels {
            let key = format!("kernel={name}");
            report.add("kernel_ms_per_step", per_step(*ns) / 1e6, "ms", Some(&key));
            report.add("kernel_calls_per_step", per_step(*calls as f64), "calls", Some(&key));
        }
        report.add("decode_steps", steps as f64, "steps", None);
        report.add("collective_calls_per_step", per_step(collective_calls as f64), "calls", None);
        report.add("collective_ms_per_step", per_step(collective_ns) / 1e6, "ms", None);
        report.add("gpu_ms_per_step", per_step(total) / 1e6, "ms", None);
        match self.step_ns.filter(|ns| *ns > 0.0) {
            Some(step_ns) => {
                report.add("step_time_ms", step_ns / 1e6, "ms", None);
                report.add("collective_share_of_step_pct", per_step(collective_ns) / step_ns * 100.0, "%", None);
            }
            // No wall time per step: the share of the GPU's time is the best there is.
            None => report.add("collective_share_of_step_pct", collective_ns / total * 100.0, "%", None),
        }
        if let Some(from) = &self.steps_from {
            report.notes.push(format!("{steps} decode steps, found by {from}"));
        }
    }
}

/// A kernel's name as tables show it: without `void `, its argument list or
/// its template arguments past the first few characters (a C++ signature can
/// run to kilobytes).
pub fn short_name(name: &str) -> String {
    let name = name.trim();
    let name = name.strip_prefix("void ").unwrap_or(name).replace("(anonymous namespace)::", "");
    // The argument list: the first `(` outside the template's `<…>`.
    let mut depth = 0i32;
    let end = name
        .char_indices()
        .find(|(_, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            *c == '(' && depth <= 0
        })
        .map_or(name.len(), |(at, _)| at);
    let name = name[..end].trim();
    let cut: String = name.chars().take(96).collect();
    if cut.len() < name.len() { format!("{cut}…") } else { cut }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_keep_what_tells_kernels_apart() {
        assert_eq!(
            short_name(
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 2, 64, 64>(char*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, int)"
            ),
            "at::native::CatArrayBatchedCopy_vectorized<at::native::OpaqueType<2u>, unsigned int, 2, 64, 64>"
        );
        assert_eq!(
            short_name(
                "fmha_cutlassF_bf16_aligned_32x128_gmem_sm80(PyTorchMemEffAttention::AttentionKernel<>::Params)"
            ),
            "fmha_cutlassF_bf16_aligned_32x128_gmem_sm80"
        );
        assert!(short_name(&format!("k<{}>()", "x".repeat(300))).ends_with('…'));
    }

    #[test]
    fn kernels_are_sorted_by_name() {
        for (name, want) in [
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "collective"),
            ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "collective"),
            (
                "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
                "collective",
            ),
            ("std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, __nv_bfloat16>", "gemm"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "gemm"),
            ("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>", "attention"),
            ("void vllm::paged_attention_v2_kernel<__nv_bfloat16>", "attention"),
            (
                "void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<c10::BFloat16>>",
                "elementwise",
            ),
            ("void vllm::rms_norm_kernel<c10::BFloat16>", "elementwise"),
            ("some_custom_kernel", "other"),
        ] {
            assert_eq!(category(name), want, "{name}");
        }
    }
}
