/*
 * fault.c - see fault.h.
 */
#define _GNU_SOURCE
#include "runtime/gpu/fault.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned fault_injected(void) {
  static const struct {
    const char *word;
    unsigned flag;
  } words[] = {{"launch", FAULT_LAUNCH}, {"build", FAULT_BUILD}, {"load", FAULT_LOAD}, {"nolib", FAULT_NOLIB}};
  const char *e = getenv("PXL_FAULT_INJECT");
  unsigned f = 0;
  while (e && *e) {
    size_t n = strcspn(e, ",");
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
      if (strlen(words[i].word) == n && !strncmp(e, words[i].word, n)) f |= words[i].flag;
    e += n + (e[n] == ',');
  }
  return f;
}

bool fault_nvidia_present(void) {
  return access("/dev/nvidiactl", F_OK) == 0 || access("/proc/driver/nvidia/version", F_OK) == 0;
}

bool fault_opencl_registered(void) {
  const char *v = getenv("OCL_ICD_VENDORS");
  const char *dir = v && *v ? v : "/etc/OpenCL/vendors";
  DIR *d = opendir(dir);
  if (!d) return v && *v && access(v, F_OK) == 0; /* OCL_ICD_VENDORS may name one .icd file */
  bool found = false;
  for (struct dirent *de; !found && (de = readdir(d));) {
    size_t n = strlen(de->d_name);
    found = n > 4 && !strcmp(de->d_name + n - 4, ".icd");
  }
  closedir(d);
  return found;
}
