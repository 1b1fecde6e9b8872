// What the controller image sets for glibc's malloc (Dockerfile), for the labs and benches that run
// the controller outside the image and report its memory: their figures are then the image's. The
// container-image test checks that the image carries each of these.
export const IMAGE_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
};
