//! Every kernel the engine compiles, for every prelude it is compiled with
//! ([`catalog::all`]), parsed and validated by naga and translated the way wgpu translates it on
//! each backend: SPIR-V (Vulkan), MSL (Metal) and HLSL (DX12), each validated with that backend's
//! capabilities. A kernel that could not run on a Mac or on Windows fails here rather than on a
//! user's machine. The kernels that need cooperative matrices are listed apart
//! ([`catalog::vulkan_only`]); they compile for Vulkan with every tile that has a cooperative
//! form, and the register-tile kernel that runs in their place elsewhere is in the catalog.
//! No GPU is needed.

use std::collections::HashMap;
use std::path::Path;

use lyre_engine::gpu::{KernelSource, COOP_WORKGROUP_BYTES};
use lyre_engine::kernels::catalog::{self, CompiledKernel};
use lyre_engine::kernels::gemm_tile::GemmTile;
use naga::back::pipeline_constants::process_overrides;
use naga::back::PipelineConstants;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

/// A backend's capabilities and its translation of a validated module (overrides resolved).
struct Backend {
    name: &'static str,
    capabilities: Capabilities,
    translate: fn(&naga::Module, &ModuleInfo) -> Result<usize, String>,
}

fn spirv(module: &naga::Module, info: &ModuleInfo) -> Result<usize, String> {
    let options = naga::back::spv::Options { lang_version: (1, 3), ..Default::default() };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".to_string(),
    };
    naga::back::spv::write_vec(module, info, &options, Some(&pipeline))
        .map(|w| w.len())
        .map_err(|e| format!("{e:?}"))
}

fn msl(module: &naga::Module, info: &ModuleInfo) -> Result<usize, String> {
    // wgpu's Metal backend writes MSL 2.4 or later on the Macs that have subgroups of one size.
    let options = naga::back::msl::Options { lang_version: (2, 4), ..Default::default() };
    let pipeline = naga::back::msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, "main".to_string())),
        ..Default::default()
    };
    naga::back::msl::write_string(module, info, &options, &pipeline)
        .map(|(s, _)| s.len())
        .map_err(|e| format!("{e:?}"))
}

fn hlsl(module: &naga::Module, info: &ModuleInfo) -> Result<usize, String> {
    // Shader model 6.2: wave intrinsics (subgroups) and native 16-bit types (the f16 KV cache).
    let options =
        naga::back::hlsl::Options { shader_model: naga::back::hlsl::ShaderModel::V6_2, ..Default::default() };
    let pipeline = naga::back::hlsl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, "main".to_string())),
    };
    let mut out = String::new();
    naga::back::hlsl::Writer::new(&mut out, &options, &pipeline)
        .write(module, info, None)
        .map_err(|e| format!("{e:?}"))?;
    Ok(out.len())
}

fn backends() -> [Backend; 3] {
    [
        Backend { name: "SPIR-V", capabilities: Capabilities::all(), translate: spirv },
        Backend { name: "MSL", capabilities: naga::back::msl::supported_capabilities(), translate: msl },
        Backend { name: "HLSL", capabilities: naga::back::hlsl::supported_capabilities(), translate: hlsl },
    ]
}

/// Parses `prelude` + the kernel, validates it with `capabilities` and resolves the overrides
/// (`constants`; the rest keep their defaults).
fn resolve(
    kernel: &CompiledKernel,
    capabilities: Capabilities,
    constants: &[(&str, f64)],
) -> Result<(naga::Module, ModuleInfo), String> {
    let source = format!("{}{}", kernel.prelude, kernel.kernel.wgsl);
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| e.emit_to_string(&source))?;
    let mut validator = Validator::new(ValidationFlags::all(), capabilities);
    let info = validator.validate(&module).map_err(|e| format!("validation: {e:?}"))?;
    let constants: PipelineConstants = constants.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    let (module, info) = process_overrides(&module, &info, None, &constants).map_err(|e| format!("{e:?}"))?;
    Ok((module.into_owned(), info.into_owned()))
}

/// [`resolve`]s the kernel with the backend's capabilities and translates it.
fn compile(kernel: &CompiledKernel, backend: &Backend, constants: &[(&str, f64)]) -> Result<usize, String> {
    let (module, info) = resolve(kernel, backend.capabilities, constants)?;
    (backend.translate)(&module, &info)
}

/// Bytes of workgroup memory `kernel` declares with `constants` resolved (the sum of its
/// workgroup variables, each rounded up to 16 bytes as drivers lay them out).
fn workgroup_bytes(kernel: &CompiledKernel, constants: &[(&str, f64)]) -> u64 {
    let (module, _) = resolve(kernel, Capabilities::all(), constants).unwrap();
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    module
        .global_variables
        .iter()
        .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
        .map(|(_, g)| u64::from(layouter[g.ty].size).next_multiple_of(16))
        .sum()
}

fn is_vulkan_only(kernel: KernelSource) -> bool {
    catalog::vulkan_only().iter().any(|v| v.kernel.name == kernel.name)
}

/// Override sets worth translating besides the defaults: each register tile for the GEMMs,
/// each subgroup size a GPU may have for the subgroup kernels.
fn variants(kernel: KernelSource) -> Vec<Vec<(&'static str, f64)>> {
    let mut out = vec![Vec::new()];
    if kernel.wgsl.contains("override TM") {
        out.extend(GemmTile::ALL.iter().map(|t| t.constants().to_vec()));
    }
    if kernel.wgsl.contains("override SG") {
        out.extend([16.0, 64.0].map(|sg| vec![("SG", sg)]));
    }
    out
}

#[test]
fn every_kernel_translates_for_every_backend_with_each_prelude() {
    let kernels = catalog::all();
    let mut failures = Vec::new();
    let mut translated = 0;
    for kernel in kernels.iter().filter(|k| !is_vulkan_only(k.kernel)) {
        for backend in backends() {
            for constants in variants(kernel.kernel) {
                match compile(kernel, &backend, &constants) {
                    Ok(len) if len > 100 => translated += 1,
                    Ok(len) => failures.push(format!(
                        "{} {:?} {}: {len} bytes",
                        kernel.kernel.name, kernel.prelude, backend.name
                    )),
                    Err(e) => failures.push(format!(
                        "{} {:?} {} {constants:?}: {e}",
                        kernel.kernel.name, kernel.prelude, backend.name
                    )),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    println!("{translated} translations of {} kernels", kernels.len());
    // Cache kernels come with both KV-cache preludes.
    let f16 = kernels.iter().filter(|k| k.prelude.contains("f16")).count();
    assert!(f16 >= 6, "{f16} kernels compiled for the f16 cache");
}

/// Parses, validates and translates to SPIR-V (what wgpu does on Vulkan) the cooperative-matrix
/// kernels with every tile that has a cooperative form: the CI adapter has no cooperative
/// matrices to run them, so this is where a shader error shows before a GPU that has them is at
/// hand. DX12 has no cooperative matrices, so HLSL validation rejects them; the register-tile
/// kernel that runs there instead is in the catalog (and translated above).
#[test]
fn cooperative_kernels_compile_for_vulkan_and_have_a_fallback_everywhere() {
    let mut coop: Vec<GemmTile> = GemmTile::ALL.iter().filter_map(|t| t.on_coop()).collect();
    assert_eq!(coop.len(), 3, "the tiles of 16, 32 and 64 rows");
    coop.push(GemmTile::COOP_WIDE);
    coop.push(GemmTile::COOP_TALL);
    let [vulkan, _, dx12] = backends();
    let only = catalog::vulkan_only();
    assert_eq!(only.len(), 3, "the matmul and conv GEMMs and the fused residual unit");
    let all: Vec<&str> = catalog::all().iter().map(|k| k.kernel.name).collect();
    for v in &only {
        let kernel = CompiledKernel { kernel: v.kernel, prelude: "" };
        assert!(
            all.contains(&v.kernel.name) && all.contains(&v.fallback.name),
            "{} and its fallback are compiled",
            v.kernel.name
        );
        // The matmul GEMM (the kernel with an input transform) also takes the tiles in chunks of 64.
        let matmul = v.kernel.wgsl.contains("override INPUT");
        let matmul_only = [GemmTile::COOP_WIDE_K64, GemmTile::COOP_SHORT];
        let tiles = coop.iter().chain(matmul_only.iter().filter(|_| matmul));
        for tile in tiles {
            assert!(tile.is_known() && tile.coop);
            let extra: &[&[(&str, f64)]] = if matmul {
                &[
                    &[("SPLIT", 1.0), ("INPUT", 0.0)],
                    &[("SPLIT", 4.0), ("INPUT", 1.0)],
                    &[("SPLIT", 1.0), ("INPUT", 2.0)],
                ]
            } else if v.kernel.wgsl.contains("override SPLIT") {
                &[&[("SPLIT", 1.0)], &[("SPLIT", 4.0)]]
            } else {
                &[&[]]
            };
            for extra in extra {
                let mut constants = tile.constants().to_vec();
                constants.extend_from_slice(extra);
                let spv = compile(&kernel, &vulkan, &constants);
                assert!(
                    spv.as_ref().is_ok_and(|&n| n > 100),
                    "{} {tile:?} {extra:?}: {:?}",
                    v.kernel.name,
                    spv.err()
                );
                // The engine uses cooperative matrices only where the adapter offers this much.
                let bytes = workgroup_bytes(&kernel, &constants);
                assert!(
                    bytes <= u64::from(COOP_WORKGROUP_BYTES),
                    "{} {tile:?} {extra:?}: {bytes} bytes of workgroup memory",
                    v.kernel.name
                );
            }
        }
        let hlsl = compile(&kernel, &dx12, &[]);
        assert!(
            hlsl.as_ref().is_err_and(|e| e.contains("validation")),
            "{} validates for DX12: {hlsl:?}",
            v.kernel.name
        );
    }
    assert!(GemmTile::ROWS_128.on_coop().is_none() && GemmTile::ROWS_128_WIDE.on_coop().is_none());
    assert_eq!(GemmTile::ROWS_128.coop_for(true).cols(), 128);
    assert_eq!(GemmTile::ROWS_32.coop_for(true), GemmTile::ROWS_32.on_coop().unwrap());
}

/// Every `.wgsl` file under `src/kernels` is part of some catalogued kernel (so the catalog
/// misses none, and no file is left unused), and every kernel name is unique.
#[test]
fn the_catalog_holds_every_wgsl_file_and_unique_names() {
    let compiled = catalog::all();
    let sources: Vec<KernelSource> = compiled.iter().map(|k| k.kernel).collect();
    let mut names: HashMap<&str, &str> = HashMap::new();
    for s in &sources {
        if let Some(other) = names.insert(s.name, s.wgsl) {
            assert_eq!(other, s.wgsl, "two kernels named {}", s.name);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels");
    let mut files = 0;
    for family in std::fs::read_dir(&root).unwrap() {
        let dir = family.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "wgsl") {
                let text = std::fs::read_to_string(&path).unwrap();
                // The KV cache's declarations are a prelude of the cache kernels.
                assert!(
                    sources.iter().any(|s| s.wgsl.contains(&text))
                        || compiled.iter().any(|k| k.prelude.contains(&text)),
                    "{} is in no catalogued kernel",
                    path.display()
                );
                files += 1;
            }
        }
    }
    assert!(files >= 40, "{files} WGSL files found");
}

/// The workgroup memory the engine reckons for the persistent layer before it picks it
/// (`layer::workgroup_bytes`, checked against the adapter's limit) covers what the kernel
/// declares at the real models' sizes: wgpu does not check a pipeline's workgroup memory, and
/// one over the limit hangs the GPU.
#[test]
fn the_persistent_layer_reckons_its_workgroup_memory() {
    use lyre_engine::kernels::attention::Heads;
    use lyre_engine::kernels::layer;
    let kernel = catalog::all().into_iter().find(|k| k.kernel.name == "decode_layer").unwrap();
    let heads = Heads { n_heads: 16, n_kv_heads: 8, head_dim: 128 };
    for (hidden, inter) in [(1024u32, 3072u32), (2048, 6144)] {
        let widest = layer::widest_input(heads, hidden, inter);
        let declared = workgroup_bytes(&kernel, &[("VEC4S", (widest / 4) as f64)]);
        let reckoned = layer::workgroup_bytes(heads, hidden, inter);
        assert!(declared <= u64::from(reckoned), "hidden {hidden}: {declared} declared, {reckoned} reckoned");
    }
}

/// Every kernel an adapter without cooperative matrices may run fits in 32 KiB of workgroup
/// memory with each of its override sets: Metal's and Direct3D 12's limit (Vulkan drivers offer
/// 32–64 KiB). wgpu does not check it, and a pipeline over the limit fails in the driver. The
/// persistent layer, sized by the model, is left out: the engine reckons it against the
/// adapter's limit before choosing it (the test above).
#[test]
fn every_portable_kernel_fits_32_kib_of_workgroup_memory() {
    let mut over = Vec::new();
    let mut checked = 0;
    for kernel in
        catalog::all().iter().filter(|k| !is_vulkan_only(k.kernel) && k.kernel.name != "decode_layer")
    {
        for constants in variants(kernel.kernel) {
            let bytes = workgroup_bytes(kernel, &constants);
            checked += 1;
            if bytes > 32 * 1024 {
                over.push(format!(
                    "{} {:?} {constants:?}: {bytes} bytes",
                    kernel.kernel.name, kernel.prelude
                ));
            }
        }
    }
    assert!(checked > 40, "{checked} kernels checked");
    assert!(over.is_empty(), "over 32 KiB of workgroup memory:\n{}", over.join("\n"));
}
