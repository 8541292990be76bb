package sim

const sysProcessVMReadv = 310 // process_vm_readv (the syscall package does not name it)
