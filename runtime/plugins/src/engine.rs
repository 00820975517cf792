//! The wasmtime engine every plugin of a process runs in: compiled with Cranelift, with fuel
//! and epoch interruption on, and a ticker thread that advances the epoch every millisecond
//! while a call is running (and sleeps otherwise). Compiling goes through the [`cache`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, EngineWeak};

use crate::bindings::Plugin as World;
use crate::cache::Cache;
use crate::host::HostState;
use crate::interface::{self, Interface};
use crate::{PluginError, Result};

/// How often the epoch advances while a call runs: a deadline is enforced to about this.
pub(crate) const TICK: Duration = Duration::from_millis(1);

/// The engine, its linker (the host functions) and the code cache. Cheap to clone.
#[derive(Clone)]
pub struct PluginEngine {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<HostState>>,
    cache: Option<Arc<Cache>>,
    pub(crate) ticker: Arc<Ticker>,
}

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine").field("cache", &self.cache).finish_non_exhaustive()
    }
}

/// The thread that advances the epoch while calls run.
pub(crate) struct Ticker {
    active: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: EngineWeak) -> Ticker {
        let active = Arc::new(AtomicUsize::new(0));
        let counting = active.clone();
        let thread = std::thread::Builder::new()
            .name("sift-plugin-epoch".into())
            .spawn(move || {
                // The epoch follows the wall clock while calls run (one step per elapsed
                // millisecond, however late a wake-up is), and stands still while none does, so
                // a deadline is a deadline even on a loaded machine.
                let mut last = Instant::now();
                loop {
                    if counting.load(Ordering::Acquire) == 0 {
                        std::thread::park_timeout(Duration::from_millis(200));
                        last = Instant::now();
                        if engine.upgrade().is_none() {
                            return;
                        }
                        continue;
                    }
                    std::thread::sleep(TICK);
                    let Some(engine) = engine.upgrade() else { return };
                    let due = last.elapsed().as_micros() / TICK.as_micros();
                    for _ in 0..due {
                        engine.increment_epoch();
                    }
                    last += TICK * due as u32;
                }
            })
            .ok();
        Ticker { active, thread }
    }

    /// Marks a call as running until the guard drops.
    pub(crate) fn running(&self) -> Running<'_> {
        if self.active.fetch_add(1, Ordering::AcqRel) == 0
            && let Some(t) = &self.thread
        {
            t.thread().unpark();
        }
        Running(self)
    }
}

/// A running call (see [`Ticker::running`]).
pub(crate) struct Running<'a>(&'a Ticker);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PluginEngine {
    /// An engine that caches compiled code in `cache` (a folder; `None`: no cache).
    pub fn new(cache: Option<std::path::PathBuf>) -> Result<PluginEngine> {
        let mut config = Config::new();
        config.consume_fuel(true);
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        let engine = Engine::new(&config).map_err(|e| PluginError::Load {
            name: "(engine)".into(),
            reason: format!("cannot start wasmtime: {e}"),
        })?;
        let mut linker = Linker::new(&engine);
        World::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s).map_err(
            |e| PluginError::Load {
                name: "(engine)".into(),
                reason: format!("cannot link the host: {e}"),
            },
        )?;
        let ticker = Arc::new(Ticker::start(engine.weak()));
        Ok(PluginEngine {
            engine,
            linker: Arc::new(linker),
            cache: cache.map(|dir| Arc::new(Cache::new(dir))),
            ticker,
        })
    }

    /// An engine with its code cache in the user's cache folder
    /// (`$XDG_CACHE_HOME/sift/plugins`, else `~/.cache/sift/plugins`; none without either).
    pub fn with_user_cache() -> Result<PluginEngine> {
        PluginEngine::new(Cache::user_dir())
    }

    /// The wasmtime engine.
    pub fn wasmtime(&self) -> &Engine {
        &self.engine
    }

    /// Compiles (or loads from the cache) the component in `bytes`, named `name` in messages,
    /// and checks its interface. Refused: anything [`Interface::refusal`] refuses, core modules,
    /// files that are not WebAssembly.
    pub fn compile(&self, name: &str, bytes: &[u8]) -> Result<(Component, Interface)> {
        interface::check_header(bytes)
            .map_err(|reason| PluginError::Refused { name: name.into(), reason })?;
        let component = match &self.cache {
            Some(cache) => cache.load_or_compile(&self.engine, bytes),
            None => Component::new(&self.engine, bytes),
        }
        .map_err(|e| PluginError::Load { name: name.into(), reason: format!("{e:#}") })?;
        let interface = Interface::of(&self.engine, &component);
        if let Some(reason) = interface.refusal() {
            return Err(PluginError::Refused { name: name.into(), reason });
        }
        Ok((component, interface))
    }

    /// Only inspects `bytes`: what they import and export, and why this host would refuse
    /// them (`None`: it accepts them). Errors: they are not a component that compiles.
    pub fn inspect(&self, name: &str, bytes: &[u8]) -> Result<(Interface, Option<String>)> {
        interface::check_header(bytes)
            .map_err(|reason| PluginError::Refused { name: name.into(), reason })?;
        let component = Component::new(&self.engine, bytes)
            .map_err(|e| PluginError::Load { name: name.into(), reason: format!("{e:#}") })?;
        let interface = Interface::of(&self.engine, &component);
        let refusal = interface.refusal();
        Ok((interface, refusal))
    }
}
