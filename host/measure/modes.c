/* modes.c: the timing modes. Each is a row: its name (the 'mode' option's choice), its default
 * warm-up, the stopping rule it applies (tb_stop_decide, stats.c) and how many samples the next
 * batch should hold. A new mode is a row here and its name in the option's choices. */
#include <math.h>

#include "measure/measure.h"

/* Adaptive: what min_samples and min_time still need; once they are met only the noise is
 * missing, and the batch grows geometrically (half the kept samples). Not while min_samples or
 * min_time are unmet: a batch sized for them alone usually ends the measurement. */
static size_t adaptive_next(const tb_stop_rule *rule, const tb_running *run, double est_busy) {
  size_t need_n = rule->min_samples > run->n ? rule->min_samples - run->n : 0;
  size_t need_t = 0;
  if (rule->min_time_s > run->gpu_time_s) /* 2 % over the estimate: no straggler batch */
    need_t = est_busy > 0 ? (size_t)ceil((rule->min_time_s - run->gpu_time_s) * 1.02 / est_busy) + 1 : 1;
  size_t n = need_n > need_t ? need_n : need_t;
  if (n == 0) n = run->n / 2;
  if (rule->max_samples && n > rule->max_samples - run->n) n = rule->max_samples - run->n;
  return n;
}

/* Fixed: the samples still missing to `repeat`. */
static size_t fixed_next(const tb_stop_rule *rule, const tb_running *run, double est_busy) {
  return rule->repeat - run->n;
}

const measure_mode measure_modes[] = {
  {"adaptive", 3, 1, adaptive_next},
  {"fixed", 20, 0, fixed_next},
};
const size_t measure_n_modes = sizeof measure_modes / sizeof measure_modes[0];

void measure_stop_rule(const measure_opts *o, tb_stop_rule *rule) {
  *rule = (tb_stop_rule){.adaptive = measure_modes[o->mode].adaptive, .repeat = (size_t)o->repeat,
                         .min_samples = (size_t)o->min_samples, .max_samples = (size_t)o->max_samples,
                         .max_noise = o->max_noise, .min_time_s = o->min_time, .timeout_s = o->timeout,
                         .plateau_tol = o->noise_plateau, .settle_window_s = o->settle_window,
                         .settle_tol = o->settle_tol};
}
