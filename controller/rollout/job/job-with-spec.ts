// A PatchJob as the job reconciler handles it: one whose spec the informer has.
import type { JobView } from '../../kube/views.js';

export type JobWithSpec = JobView & { spec: NonNullable<JobView['spec']> };
