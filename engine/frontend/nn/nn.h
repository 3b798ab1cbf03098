// The builder API in one include: Var, functional ops (F::), modules and layers, modes, jit,
// cond/fori_loop, ops::print, deterministic init.
#pragma once

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/control.h"
#include "engine/frontend/nn/functional.h"
#include "engine/frontend/nn/init.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/nn/layers.h"
#include "engine/frontend/nn/module.h"
#include "engine/frontend/nn/var.h"
