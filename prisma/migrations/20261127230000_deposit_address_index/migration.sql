-- A sync chunk reads the deposits of the addresses it reconciles ("depositAddressId" = ANY(...)): without
-- an index of their own that read walked every deposit the network ever had (issue 22, point 2: 18-25 ms
-- per chunk at 10^5 past deposits, twice per deposit confirmed). An address has a handful of deposits.
-- CreateIndex
CREATE INDEX "Deposit_depositAddressId_idx" ON "Deposit"("depositAddressId");
